import { ApiError } from '../../../core/errors/index.js';

/**
 * Deepest nesting of objects and arrays a JSON body may have. Real requests stay far below it
 * (a tool's JSON schema nested twenty levels deep is about sixty levels of JSON); thousands of
 * levels overflow the stack of every recursive walk after parsing (validation, translation,
 * re-serialisation), so excess depth is refused before the body is parsed at all.
 */
export const maxJsonDepth = 128;

const openBrace = 0x7b; // {
const openBracket = 0x5b; // [
const closeBrace = 0x7d; // }
const closeBracket = 0x5d; // ]
const quote = 0x22; // "
const backslash = 0x5c; // \

/**
 * Throws `invalid_json` (400) when the text nests objects or arrays deeper than `limit`. One
 * linear pass over the text that skips strings; brackets inside strings do not count. Malformed
 * JSON is left for the parser to report.
 */
export function checkJsonDepth(text: string, limit: number = maxJsonDepth): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === backslash) i++;
      else if (c === quote) inString = false;
      continue;
    }
    if (c === quote) inString = true;
    else if (c === openBrace || c === openBracket) {
      if (++depth > limit) {
        throw new ApiError('invalid_json', {
          humanMessage: `The request body nests objects or arrays more than ${limit} levels deep`,
          details: { max_depth: limit },
        });
      }
    } else if (c === closeBrace || c === closeBracket) depth--;
  }
}
