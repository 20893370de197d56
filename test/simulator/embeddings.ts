// POST /v1/embeddings: deterministic unit vectors seeded by a hash of each input. The OpenAI SDK
// asks for base64 unless the caller chose a format, so both encodings are served.
import { estimateTokens, hash32, prng } from './deterministic.js';
import { asObject, type Exchange, optionalInt, sendError, sendJson } from './http.js';

const MAX_DIMENSIONS = 8192;

/** Handles POST /v1/embeddings. */
export function handleEmbeddings(ex: Exchange, raw: unknown): void {
  const body = asObject(raw);
  if (!body) return sendError(ex, 400, 'The request body must be a JSON object.');
  if (typeof body.model !== 'string' || body.model === '') {
    return sendError(ex, 400, 'you must provide a model parameter', { param: 'model' });
  }
  const inputs = readInputs(body.input);
  if (!inputs) {
    return sendError(ex, 400, "'input' must be a non-empty string, array of strings, array of tokens or array of token arrays.", {
      param: 'input',
    });
  }
  const dims = optionalInt(body, 'dimensions') ?? ex.embeddingDimensions;
  if (Number.isNaN(dims) || dims < 1 || dims > MAX_DIMENSIONS) {
    return sendError(ex, 400, `'dimensions' must be an integer from 1 to ${MAX_DIMENSIONS}.`, { param: 'dimensions' });
  }
  const format = body.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') {
    return sendError(ex, 400, "'encoding_format' must be 'float' or 'base64'.", { param: 'encoding_format' });
  }
  let tokens = 0;
  const data = inputs.map((input, index) => {
    tokens += typeof input === 'string' ? estimateTokens(input) : input.length;
    const vector = embed(typeof input === 'string' ? input : `tokens:${input.join(',')}`, dims);
    return { object: 'embedding', index, embedding: format === 'base64' ? toBase64(vector) : Array.from(vector) };
  });
  sendJson(ex, 200, { object: 'list', data, model: body.model, usage: { prompt_tokens: tokens, total_tokens: tokens } });
}

/** A unit-length vector derived only from the text and the size. */
export function embed(text: string, dims: number): Float32Array {
  const next = prng(hash32(text));
  const v = new Float32Array(dims);
  let norm = 0;
  for (let i = 0; i < dims; i++) {
    const x = next() * 2 - 1;
    v[i] = x;
    norm += x * x;
  }
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 1;
  for (let i = 0; i < dims; i++) v[i] = (v[i] ?? 0) * scale;
  return v;
}

/** Little-endian float32 bytes, base64 — the wire form of `encoding_format: "base64"`. */
function toBase64(v: Float32Array): string {
  const buf = Buffer.allocUnsafe(v.length * 4);
  for (let i = 0; i < v.length; i++) buf.writeFloatLE(v[i] ?? 0, i * 4);
  return buf.toString('base64');
}

/** Normalises the four accepted input shapes to a list; null when invalid or empty. */
function readInputs(input: unknown): Array<string | number[]> | null {
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input) || input.length === 0) return null;
  if (input.every((x) => typeof x === 'string')) return input as string[];
  if (input.every((x) => typeof x === 'number' && Number.isInteger(x))) return [input as number[]];
  if (input.every((x) => Array.isArray(x) && x.length > 0 && x.every((t) => typeof t === 'number' && Number.isInteger(t)))) {
    return input as number[][];
  }
  return null;
}
