// One rule for where an image may come from, on every interface and toward every supplier
// (docs/interfaces.md "Images"): an http(s) URL, or inline data that is valid base64. Checked in
// the interface schemas (chat's `image_url.url`, messages' image `source`), so a same-protocol
// supplier never receives a `file:///etc/passwd` or broken base64 either, and used again by the
// translations that rebuild an image for the other family.

import { z } from 'zod';

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

/**
 * Base64 as MIME writes it (RFC 2045: a line break every 76 characters, `\r\n` or `\n`) without
 * its line breaks; other text as it is. Only line breaks are removed: any other character outside
 * the alphabet is still refused by isBase64.
 */
export function withoutLineBreaks(data: string): string {
  return data.includes('\n') || data.includes('\r') ? data.replace(/\r?\n|\r/g, '') : data;
}

/** A data URL whose base64 has MIME line breaks, without them; any other URL as it is. */
function dataUrlWithoutLineBreaks(url: string): string {
  if (!url.startsWith('data:')) return url;
  const comma = url.indexOf(',');
  return comma < 0 ? url : url.slice(0, comma + 1) + withoutLineBreaks(url.slice(comma + 1));
}

/**
 * A checked inline-data or URL field of a request: the value forwarded (base64 line breaks removed,
 * so every supplier — and every translation — gets the canonical form both APIs document), or the
 * problem to report for it. For zod `.transform`, so the schema checks and normalises in one pass.
 */
export type Checked = { value: string; problem?: undefined } | { value?: undefined; problem: string };

/** A chat `image_url.url` (or a Responses `input_image.image_url`): an http(s) URL or a base64 data URL. */
export function checkedImageUrl(url: string): Checked {
  const value = dataUrlWithoutLineBreaks(url);
  const problem = imageUrlProblem(value);
  return problem === undefined ? { value } : { problem };
}

/** Inline base64 (a messages image or document `source.data`), MIME line breaks allowed. */
export function checkedBase64(data: string): Checked {
  const value = withoutLineBreaks(data);
  return isBase64(value) ? { value } : { problem: base64Message };
}

/** A chat `file.file_data` (or a Responses `input_file.file_data`): a base64 data URL, or base64 alone. */
export function checkedFileData(data: string): Checked {
  if (!data.startsWith('data:')) return checkedBase64(data);
  const value = dataUrlWithoutLineBreaks(data);
  const parsed = parseDataUrl(value);
  if (!parsed) return { problem: 'a file data URL must be base64 encoded (data:<type>;base64,...)' };
  return isBase64(parsed.data) ? { value } : { problem: 'the data URL does not hold valid base64' };
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
export const base64Message = 'must be valid base64 (A–Z, a–z, 0–9, + and /, padded with =; line breaks allowed)';

/** A non-empty string field checked (and normalised) by one of the checks above: its problem is the field's validation error. */
export function checkedField(check: (text: string) => Checked) {
  return z
    .string()
    .min(1)
    .transform((text, ctx) => {
      const checked = check(text);
      if (checked.problem === undefined) return checked.value;
      ctx.addIssue({ code: 'custom', message: checked.problem });
      return z.NEVER;
    });
}
