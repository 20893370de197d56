// One rule for where an image may come from, on every interface and toward every supplier
// (docs/interfaces.md "Images"): an http(s) URL, or inline data that is valid base64. Checked in
// the interface schemas (chat's `image_url.url`, messages' image `source`), so a same-protocol
// supplier never receives a `file:///etc/passwd` or broken base64 either, and used again by the
// translations that rebuild an image for the other family.

/** True for an absolute http:// or https:// URL (what both APIs fetch images from). */
export function isHttpUrl(url: string): boolean {
  return /^https?:\/\//i.test(url) && URL.canParse(url);
}

const base64Alphabet = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * True for non-empty standard base64 (RFC 4648 alphabet, no whitespace): padded to a multiple of
 * four, or unpadded with a length a padded form can have (as data: URLs are read).
 */
export function isBase64(data: string): boolean {
  if (data.length === 0 || !base64Alphabet.test(data)) return false;
  return data.endsWith('=') ? data.length % 4 === 0 : data.length % 4 !== 1;
}

/** Splits a `data:<mime>;base64,<data>` URL; undefined for any other URL (or no data). */
export function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const match = /^data:([^;,]+)((?:;[^;,]*)*?);base64,(.*)$/s.exec(url);
  if (!match) return undefined;
  const [, mediaType, , data] = match;
  if (mediaType === undefined || data === undefined || data === '') return undefined;
  return { mediaType: mediaType.toLowerCase(), data };
}

/** What is wrong with an OpenAI `image_url.url`, or undefined when it is an http(s) URL or a base64 data URL. */
export function imageUrlProblem(url: string): string | undefined {
  if (url.startsWith('data:')) {
    const parsed = parseDataUrl(url);
    if (!parsed) return 'an image data URL must be base64 encoded (data:<type>;base64,...)';
    return isBase64(parsed.data) ? undefined : 'the data URL does not hold valid base64';
  }
  return isHttpUrl(url) ? undefined : 'must be an http(s) URL or a base64 data URL (data:<type>;base64,...)';
}

export const httpUrlMessage = 'must be an http(s) URL';
export const base64Message = 'must be valid base64 (A–Z, a–z, 0–9, + and /, padded with =)';
