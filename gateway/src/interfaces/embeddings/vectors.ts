import { ApiError } from '../../../../core/errors/index.js';

/** One embedding as a client asked for it: numbers, or base64 of little-endian float32 bytes. */
export type EncodedEmbedding = number[] | string;

/**
 * An embedding from a supplier in the client's encoding. The OpenAI SDKs ask for `base64`
 * unless the caller chose a format (openai-node #1310) and decode it themselves, so a supplier
 * that ignores `encoding_format` must not break them: either form is converted as needed.
 */
export function encodeEmbedding(value: unknown, format: 'float' | 'base64', supplier: string): EncodedEmbedding {
  if (typeof value === 'string') return format === 'base64' ? value : decodeBase64(value, supplier);
  if (Array.isArray(value) && value.every((x) => typeof x === 'number')) return format === 'float' ? value : encodeBase64(value);
  throw new ApiError('upstream_invalid_response', {
    humanMessage: `Supplier ${supplier} returned an embedding that is neither numbers nor base64`,
    details: { supplier },
  });
}

function encodeBase64(vector: readonly number[]): string {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i]!, i * 4);
  return bytes.toString('base64');
}

function decodeBase64(text: string, supplier: string): number[] {
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length % 4 !== 0) {
    throw new ApiError('upstream_invalid_response', {
      humanMessage: `Supplier ${supplier} returned a malformed base64 embedding`,
      details: { supplier },
    });
  }
  const vector = new Array<number>(bytes.length / 4);
  for (let i = 0; i < vector.length; i++) vector[i] = bytes.readFloatLE(i * 4);
  return vector;
}
