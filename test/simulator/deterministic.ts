// Pure helpers that turn request content into reproducible output: hashes, the reply text,
// token estimates and ids. Everything here is cheap because it runs on every request.
import { randomBytes } from 'node:crypto';

/** 32-bit FNV-1a hash of a string; fast and stable across runs, not cryptographic. */
export function hash32(text: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Seeded PRNG (mulberry32) returning floats in [0, 1); used for embeddings and padding. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Token estimate used for every count: ceil(chars / 4). */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Tokens charged per message on top of its text, like the real chat templates do. */
export const TOKENS_PER_MESSAGE = 3;
/** Flat token charge per image part, so images visibly change the prompt count. */
export const TOKENS_PER_IMAGE = 85;

/** Characters and images found while walking a message payload. */
export interface Tally {
  chars: number;
  images: number;
}

const IMAGE_TYPES = new Set(['image', 'image_url', 'input_image']);

/**
 * Adds the text size of any message content (string, parts, blocks, tool calls, tool results)
 * to the tally. Walks generically so both API families share one counting rule.
 */
export function tallyContent(value: unknown, tally: Tally): void {
  if (typeof value === 'string') {
    tally.chars += value.length;
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) tallyContent(item, tally);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  const obj = value as Record<string, unknown>;
  if (typeof obj.type === 'string' && IMAGE_TYPES.has(obj.type)) {
    tally.images++;
    return;
  }
  if (typeof obj.text === 'string') tally.chars += obj.text.length;
  if (typeof obj.thinking === 'string') tally.chars += obj.thinking.length;
  if (obj.content !== undefined) tallyContent(obj.content, tally);
  if (obj.output !== undefined) tallyContent(obj.output, tally);
  if (typeof obj.name === 'string' && (obj.type === 'tool_use' || obj.type === 'function_call')) tally.chars += obj.name.length;
  if (typeof obj.arguments === 'string') tally.chars += obj.arguments.length;
  if (obj.input !== undefined && obj.type === 'tool_use') tally.chars += JSON.stringify(obj.input).length;
  if (Array.isArray(obj.tool_calls)) {
    for (const call of obj.tool_calls) {
      const fn = (call as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
      if (typeof fn?.name === 'string') tally.chars += fn.name.length;
      if (typeof fn?.arguments === 'string') tally.chars += fn.arguments.length;
    }
  }
}

/** Prompt tokens of one message-like value: ceil(chars/4) + 3 + 85 per image. */
export function messageTokens(message: unknown): number {
  const tally: Tally = { chars: 0, images: 0 };
  tallyContent(message, tally);
  return Math.ceil(tally.chars / 4) + TOKENS_PER_MESSAGE + tally.images * TOKENS_PER_IMAGE;
}

/** Prompt tokens of a tool list: its JSON size / 4 (only paid when tools are sent). */
export function toolsTokens(tools: unknown): number {
  return Array.isArray(tools) && tools.length > 0 ? estimateTokens(JSON.stringify(tools)) : 0;
}

/** Concatenates the plain text of a content value (string, text parts, nested tool results). */
export function plainText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    let out = '';
    for (const item of value) {
      const t = plainText(item);
      if (t) out = out ? `${out} ${t}` : t;
    }
    return out;
  }
  if (value === null || typeof value !== 'object') return '';
  const obj = value as Record<string, unknown>;
  if (typeof obj.text === 'string') return obj.text;
  if (obj.content !== undefined) return plainText(obj.content);
  if (obj.output !== undefined) return plainText(obj.output);
  return '';
}

const FILLER = [
  'amber',
  'birch',
  'cobalt',
  'delta',
  'ember',
  'fjord',
  'garnet',
  'harbor',
  'indigo',
  'juniper',
  'kelp',
  'lumen',
  'meadow',
  'nectar',
  'onyx',
  'pebble',
];

/**
 * The simulated answer to a user text: "Simulated reply to: <first 12 words>", padded with
 * 0–7 filler words chosen by a hash of the whole text, so a different input (even past word
 * 12) almost always gives a different output while the same input always gives the same one.
 */
export function replyText(userText: string): string {
  const words = userText
    .trim()
    .split(/\s+/)
    .filter((w) => w.length > 0);
  const head = words.length > 0 ? words.slice(0, 12).join(' ') : '(no text)';
  const h = hash32(userText);
  const padCount = h % 8;
  if (padCount === 0) return `Simulated reply to: ${head}`;
  const next = prng(h);
  const pad: string[] = [];
  for (let i = 0; i < padCount; i++) pad.push(FILLER[Math.floor(next() * FILLER.length)] ?? 'amber');
  return `Simulated reply to: ${head} (${pad.join(' ')})`;
}

/** Splits text into word-sized stream pieces, each carrying its leading whitespace. */
export function streamPieces(text: string): string[] {
  return text.match(/\s*\S+/g) ?? (text ? [text] : []);
}

/** Splits a string into fixed-size fragments (used for streamed tool arguments). */
export function fragments(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** Result of applying max-token and stop-sequence limits to generated text. */
export interface Limited {
  text: string;
  /** 'length' when cut by the token limit, 'stop' when cut by a stop sequence. */
  cut: 'length' | 'stop' | null;
  stopSequence: string | null;
}

/** Applies stop sequences (cut before the first match) then a max-token budget (4 chars/token). */
export function limitText(text: string, maxTokens: number | undefined, stops: readonly string[]): Limited {
  let out = text;
  let cut: Limited['cut'] = null;
  let stopSequence: string | null = null;
  let best = -1;
  for (const s of stops) {
    if (!s) continue;
    const at = out.indexOf(s);
    if (at !== -1 && (best === -1 || at < best)) {
      best = at;
      stopSequence = s;
    }
  }
  if (best !== -1) {
    out = out.slice(0, best);
    cut = 'stop';
  }
  if (maxTokens !== undefined && estimateTokens(out) > maxTokens) {
    out = out.slice(0, Math.max(0, maxTokens * 4));
    cut = 'length';
    stopSequence = null;
  }
  return { text: out, cut, stopSequence };
}

// Ids only need to be unique and well-formed, not reproducible: a random per-process prefix
// plus a counter avoids calling the RNG on every request.
const ID_PREFIX = randomBytes(6).toString('hex');
let idCounter = 0;

/** A unique id such as `chatcmpl-SIM3f9a…0001`; body matches `[A-Za-z0-9]+`. */
export function newId(prefix: string): string {
  idCounter = (idCounter + 1) % 0x7fffffff;
  return `${prefix}SIM${ID_PREFIX}${idCounter.toString(36).padStart(6, '0')}`;
}

/** Unix time in seconds, as used by `created` fields. */
export function unixSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
