// The processor API's parameter encoding, as the official library writes it: form fields (or a
// query string) with bracketed paths — `line_items[0][price_data][unit_amount]=1061`,
// `metadata[payer_id]=user:7`. Parsed into nested objects; numeric segments make arrays.

/** A parsed parameter tree: strings at the leaves. */
export type Params = { [key: string]: ParamValue };
export type ParamValue = string | Params | ParamValue[];

const segmentPattern = /\[([^\]]*)\]/g;

/** Splits `a[b][0]` into `['a', 'b', '0']` (undefined for a malformed name). */
function pathOf(name: string): string[] | undefined {
  const open = name.indexOf('[');
  if (open === -1) return [name];
  const head = name.slice(0, open);
  const rest = name.slice(open);
  const segments = [...rest.matchAll(segmentPattern)].map((m) => m[1]!);
  if (segments.map((s) => `[${s}]`).join('') !== rest) return undefined;
  return [head, ...segments];
}

/** Objects whose keys are all 0..n-1 become arrays, recursively. */
function arraysOf(value: ParamValue): ParamValue {
  if (typeof value === 'string' || Array.isArray(value)) return value;
  const keys = Object.keys(value);
  for (const key of keys) value[key] = arraysOf(value[key]!);
  const numeric = keys.length > 0 && keys.every((k) => /^\d+$/.test(k));
  if (!numeric) return value;
  const sorted = keys.map(Number).sort((a, b) => a - b);
  if (!sorted.every((n, i) => n === i)) return value;
  return sorted.map((n) => value[String(n)]!);
}

/** Parses `application/x-www-form-urlencoded` text (or a query string) into a tree. */
export function parseParams(text: string): Params {
  const root: Params = {};
  for (const [name, value] of new URLSearchParams(text)) {
    const path = pathOf(name);
    if (!path || path.some((s) => s === '' || s === '__proto__' || s === 'constructor' || s === 'prototype')) continue;
    let node: Params = root;
    for (const segment of path.slice(0, -1)) {
      const next = node[segment];
      if (next === undefined || typeof next === 'string' || Array.isArray(next)) node[segment] = {};
      node = node[segment] as Params;
    }
    node[path.at(-1)!] = value;
  }
  return arraysOf(root) as Params;
}

/** A string leaf at `path`, or undefined. */
export function leaf(params: Params | undefined, ...path: (string | number)[]): string | undefined {
  let node: ParamValue | undefined = params;
  for (const segment of path) {
    if (node === undefined || typeof node === 'string') return undefined;
    node = Array.isArray(node) ? node[Number(segment)] : node[String(segment)];
  }
  return typeof node === 'string' ? node : undefined;
}

/** The object at `path` as string pairs (metadata), or {}. */
export function stringMap(params: Params | undefined, key: string): Record<string, string> {
  const node = params?.[key];
  if (node === undefined || typeof node === 'string' || Array.isArray(node)) return {};
  return Object.fromEntries(Object.entries(node).filter((e): e is [string, string] => typeof e[1] === 'string'));
}
