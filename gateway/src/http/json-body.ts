import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../../core/errors/index.js';
import { checkJsonDepth } from './json-depth.js';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { largeBodyBytes, OneAtATime } from './large-bodies.js';

/**
 * The body as text whose depth was checked, or undefined for an empty body (no body: routes
 * without one — revoke, DELETE — accept it, and validateBody refuses it where a body is required).
 * The depth is checked before parsing: every recursive walk after it (validation, translation)
 * must stay in bounds.
 */
function checkedText(bytes: Buffer): string | undefined {
  const text = utf8Text(bytes);
  if (text.trim() === '') return undefined;
  checkJsonDepth(text);
  return text;
}

/** The body's value, all in the current turn: for bodies of ordinary size. */
function parseJson(bytes: Buffer): unknown {
  const text = checkedText(bytes);
  return text === undefined ? undefined : parseCheckedJson(text);
}

/** JSON.parse of a text whose depth was checked, failing as a catalogue error. */
function parseCheckedJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (cause) {
    const detail = cause instanceof SyntaxError ? `: ${cause.message}` : '';
    throw new ApiError('invalid_json', { humanMessage: `The request body is not valid JSON${detail}`, cause });
  }
}

/**
 * Bodies are read as sent: a compressed one (`Content-Encoding: gzip`) would fail as "not JSON"
 * with its binary quoted back, so it is refused for what it is.
 */
function refuseContentEncoding(encoding: string | undefined): void {
  if (encoding === undefined || encoding.trim() === '' || encoding.trim().toLowerCase() === 'identity') return;
  throw new ApiError('unsupported_media_type', {
    param: 'content-encoding',
    humanMessage: `Request bodies are accepted uncompressed only; Content-Encoding "${encoding}" is not supported`,
  });
}

/**
 * Node undoes `chunked` and nothing else: a body sent `Transfer-Encoding: gzip, chunked` arrives
 * still compressed. Refused like a Content-Encoding, naming the coding, rather than as "not JSON".
 */
function refuseTransferCoding(codings: string | undefined): void {
  if (codings === undefined || codings === 'chunked') return; // the usual case, without splitting it
  const other = codings
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'chunked' && c !== 'identity');
  if (other.length === 0) return;
  throw new ApiError('unsupported_media_type', {
    param: 'transfer-encoding',
    humanMessage: `Request bodies are accepted uncompressed only; Transfer-Encoding "${other.join(', ')}" is not supported`,
  });
}

/**
 * The body as text, refusing bytes that are not UTF-8 (RFC 8259 §8.1): decoding them would put
 * U+FFFD in their place, and the request would reach the supplier — or a key's name the
 * database — silently altered.
 */
function utf8Text(body: Buffer): string {
  if (!isUtf8(body)) {
    throw new ApiError('invalid_json', { humanMessage: 'The request body is not valid UTF-8; JSON must be sent as UTF-8' });
  }
  return body.toString('utf8');
}

/** What the JSON routes accept, as said in every refusal of a Content-Type. */
const acceptedJson = 'application/json (or a +json type), in UTF-8';

/** A Content-Type as quoted back in an error: bounded, printable. */
export function quotedType(sent: string): string {
  const shown = sent.length > 80 ? `${sent.slice(0, 80)}…` : sent;
  return `"${shown.replace(/[^\x20-\x7e]/g, '?')}"`;
}

/** The 415 for a body whose Content-Type is not JSON, or JSON in a charset other than UTF-8. */
export function contentTypeRefusal(sent: string | undefined, reason: 'not-json' | 'charset' | 'malformed' = 'not-json'): ApiError {
  const humanMessage =
    sent === undefined || sent.trim() === ''
      ? `The request has no Content-Type; send it as ${acceptedJson}`
      : reason === 'charset'
        ? `Content-Type ${quotedType(sent)} names a charset other than UTF-8; send the body as ${acceptedJson}`
        : reason === 'malformed'
          ? `Content-Type ${quotedType(sent)} is not a valid media type; send the body as ${acceptedJson}`
          : `Content-Type ${quotedType(sent)} is not JSON; send the body as ${acceptedJson}`;
  return new ApiError('unsupported_media_type', { param: 'content-type', humanMessage });
}

/** One `name=value` parameter of a media type: a token, and a token or quoted string (RFC 9110 §5.6.6; whitespace around tolerated). */
const mediaTypeParameter = /^\s*([!#$%&'*+.^`|~\w-]+)\s*=\s*([!#$%&'*+.^`|~\w-]+|"(?:[^"\\]|\\.)*")\s*$/;

/**
 * Refuses a body that is not declared JSON in UTF-8: `application/json` or `application/…+json`,
 * no charset or `charset=utf-8` (case-insensitive). The exact value every SDK sends costs one
 * comparison.
 */
function refuseContentType(sent: string | undefined): void {
  // Nothing declared (a script posting a string without headers): the body is read as JSON, and
  // is invalid_json if it is not. Only a declaration that contradicts JSON in UTF-8 is refused.
  if (sent === 'application/json' || sent === undefined || sent.trim() === '') return;
  const [mediaType = '', ...parameters] = sent.split(';');
  const type = mediaType.trim().toLowerCase();
  if (type !== 'application/json' && !/^application\/[!#$%&'*.^`|~\w-]+\+json$/.test(type)) throw contentTypeRefusal(sent);
  for (const parameter of parameters) {
    // An empty parameter (`application/json;`) is allowed by RFC 9110 §5.6.6; any other must be
    // `name=value` — `; charset`, `; =utf-8` or `; foo` are no media type (they were read as JSON).
    if (parameter.trim() === '') continue;
    const found = mediaTypeParameter.exec(parameter);
    if (!found) throw contentTypeRefusal(sent, 'malformed');
    if (found[1]!.toLowerCase() !== 'charset') continue;
    const charset = found[2]!.replace(/^"(.*)"$/, '$1').toLowerCase();
    if (charset !== 'utf-8') throw contentTypeRefusal(sent, 'charset');
  }
}

/**
 * Every body on the JSON interfaces must be declared JSON in UTF-8 (`refuseContentType`): a
 * `text/plain`, form-encoded (`curl -d` without `-H 'content-type: application/json'`) or UTF-16
 * body is `415 unsupported_media_type` naming what was sent and what is accepted, rather
 * than read as UTF-8 JSON whatever it said it was. A body with no Content-Type at all is read as
 * JSON (nothing contradicts it), and an empty body needs no type (revoke, DELETE). Multipart routes register their own parser. Parse failures
 * are catalogue errors (`invalid_json`), never fastify's.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  const largeBodies = new OneAtATime();
  const parser = (request: FastifyRequest, body: string | Buffer, done: (error: Error | null, value?: unknown) => void) => {
    const bytes = body as Buffer;
    try {
      if (bytes.length > 0) refuseContentType(request.headers['content-type']);
      refuseContentEncoding(request.headers['content-encoding']);
      refuseTransferCoding(request.headers['transfer-encoding']);
      if (bytes.length <= largeBodyBytes) return void done(null, parseJson(bytes));
    } catch (error) {
      return void done(error as Error, undefined);
    }
    // Large: one at a time, a turn of the event loop before each step (large-bodies.ts); the body
    // of a client that left while it waited is not parsed at all.
    largeBodies
      .run(bytes.length, async () => {
        await nextTurn();
        // The socket, not the request stream: a request stream is destroyed once its body was read.
        if (request.socket.destroyed) return undefined;
        const text = checkedText(bytes);
        if (text === undefined) return undefined;
        await nextTurn();
        const value = parseCheckedJson(text);
        await nextTurn();
        return value;
      })
      .then(
        (value) => done(null, value),
        (error: unknown) => done(error as Error, undefined),
      );
  };
  // The same parser under its own name as well: fastify caches the parser found for a
  // Content-Type value only when a named one matches, so with the catch-all alone every JSON
  // request parsed its Content-Type header again (~1 % of the serving thread in the profile).
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parser);
  app.addContentTypeParser('*', { parseAs: 'buffer' }, parser);
}
