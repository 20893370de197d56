// Anthropic allows tool names up to 128 characters, OpenAI 64 of [a-zA-Z0-9_-]. Names that do
// not fit are shortened deterministically (the same name always gives the same short name, in
// the tool list and in the history alike) and restored in the response.
import { createHash } from 'node:crypto';

const openAiToolName = /^[a-zA-Z0-9_-]{1,64}$/;

/** A 64-character-safe stand-in for a tool name: first 55 safe characters, `_`, 8 hex of its SHA-256. */
export function shortenToolName(name: string): string {
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
  return `${name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 55)}_${hash}`;
}

/** The tool names of one request: what the supplier is told, and how to read its answers back. */
export class ToolNameMap {
  private readonly originals = new Map<string, string>();

  /** The name to send upstream; remembers the original when it had to be shortened. */
  toUpstream(name: string): string {
    if (openAiToolName.test(name)) return name;
    const short = shortenToolName(name);
    this.originals.set(short, name);
    return short;
  }

  /** The client's original name for a name the supplier used. */
  restore(name: string): string {
    return this.originals.get(name) ?? name;
  }
}
