// One rule for request fields a translation does not carry (docs/interfaces.md "Parameters across
// families"): a field the translator neither maps nor knows to be a hint is refused when its value
// asks for something, never dropped. Both SDK families grow new fields every few months; a new one
// sent to a supplier of the other protocol would otherwise vanish without a word.
import { isJsonObject } from './safe-json.js';

/** True when a value asks for something (not absent, null, false, 0, '', [] or {}). */
export function asks(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === 0 || value === '') return false;
  if (Array.isArray(value)) return value.length > 0;
  if (isJsonObject(value)) return Object.keys(value).length > 0;
  return true;
}

/**
 * Values that ask for nothing although not empty: a default spelled out (`modalities: ["text"]`,
 * `speed: "standard"`). Any other value of these fields asks for something a translation cannot
 * carry, and is refused like any unhandled field.
 */
const spelledOutDefaults: Readonly<Record<string, (value: unknown) => boolean>> = {
  modalities: (value) => Array.isArray(value) && value.every((m) => m === 'text'),
  speed: (value) => value === 'standard',
};

/** The first field of `request` outside `handled` whose value asks for something. */
export function unhandledField(request: object, handled: ReadonlySet<string>): string | undefined {
  for (const [field, value] of Object.entries(request))
    if (!handled.has(field) && asks(value) && spelledOutDefaults[field]?.(value) !== true) return field;
  return undefined;
}
