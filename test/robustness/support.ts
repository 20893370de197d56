// What the robustness suites share: the one error shape every answer must have, raw-socket HTTP
// (to send what no HTTP client would), and a JSON request helper.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { errorCatalogue } from '../../core/errors/index.js';

/** Codes the gateway may answer with that are not in the catalogue: none of its own (suppliers' codes pass through). */
const catalogueCodes = new Set(Object.keys(errorCatalogue));

/**
 * Problems with an error answer, or [] when it is in the catalogue shape: a JSON body
 * `{type:"error", error:{code, type, message:"<code> - <human_message>", human_message, retryable, details}}`,
 * a catalogue code and an error status.
 */
export function catalogueShapeProblems(status: number, text: string, contentType: string | undefined): string[] {
  const problems: string[] = [];
  if (status < 400 || status > 599) return [`status ${status} is not an error status`];
  if (!/^application\/json/.test(contentType ?? '')) problems.push(`content-type ${contentType ?? '(none)'}`);
  let body: { type?: unknown; error?: Record<string, unknown> };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return [...problems, `body is not JSON: ${text.slice(0, 200)}`];
  }
  const error = body.error;
  if (body.type !== 'error' || typeof error !== 'object' || error === null)
    return [...problems, `not the error shape: ${text.slice(0, 300)}`];
  if (typeof error.code !== 'string' || !catalogueCodes.has(error.code))
    problems.push(`code ${String(error.code)} is not in the catalogue`);
  if (typeof error.human_message !== 'string' || error.human_message.length === 0) problems.push('no human_message');
  if (error.message !== `${String(error.code)} - ${String(error.human_message)}`)
    problems.push('message is not "<code> - <human_message>"');
  if (typeof error.type !== 'string') problems.push('no type');
  if (typeof error.retryable !== 'boolean') problems.push('no retryable');
  return problems;
}

/** Asserts an error answer is in the catalogue shape, with `status` and `code` when given. */
export function assertCatalogueError(
  reply: { status: number; text: string; contentType: string | undefined },
  status?: number,
  code?: string,
): void {
  assert.deepEqual(catalogueShapeProblems(reply.status, reply.text, reply.contentType), [], `${reply.status} ${reply.text.slice(0, 300)}`);
  if (status !== undefined) assert.equal(reply.status, status, reply.text.slice(0, 300));
  if (code !== undefined) assert.equal((JSON.parse(reply.text) as { error: { code: string } }).error.code, code);
}

/** An HTTP answer as text. */
export interface TextReply {
  status: number;
  headers: Headers;
  text: string;
  contentType: string | undefined;
}

/** A JSON POST (or any method) with a key, answered as text; a Buffer body is sent as these exact bytes. */
export async function send(
  baseUrl: string,
  path: string,
  init: { method?: string; key?: string; body?: string | object | Buffer; headers?: Record<string, string> } = {},
): Promise<TextReply> {
  const body =
    init.body === undefined || typeof init.body === 'string' || Buffer.isBuffer(init.body) ? init.body : JSON.stringify(init.body);
  const response = await fetch(`${baseUrl}${path}`, {
    method: init.method ?? (body === undefined ? 'GET' : 'POST'),
    headers: {
      ...(body !== undefined && { 'content-type': 'application/json' }),
      ...(init.key && { authorization: `Bearer ${init.key}` }),
      ...init.headers,
    },
    ...(body !== undefined && { body }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, contentType: response.headers.get('content-type') ?? undefined };
}

/** What came back on a raw connection: the first response (if any) and whether the server closed. */
export interface RawExchange {
  /** Every byte received until the connection closed (or the exchange was cut off). */
  received: string;
  status: number | undefined;
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection (rather than the exchange being cut off by `waitMs`). */
  closedByServer: boolean;
}

/** Parses the first final (not 1xx) HTTP/1.1 response in `text` (Content-Length framed). */
export function parseFirstResponse(text: string): Pick<RawExchange, 'status' | 'headers' | 'body'> {
  while (/^HTTP\/1\.[01] 1\d\d /.test(text) && text.includes('\r\n\r\n')) text = text.slice(text.indexOf('\r\n\r\n') + 4);
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return { status: undefined, headers: {}, body: '' };
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = Buffer.from(text.slice(end + 4), 'latin1');
  const length = Number(headers['content-length']);
  const body = (Number.isFinite(length) ? rest.subarray(0, length) : rest).toString('utf8');
  return { status: Number.isFinite(status) ? status : undefined, headers, body };
}

/** How a raw exchange behaves. */
export interface RawExchangeOptions {
  /** Ceiling of the whole exchange (not an assertion: the caller asserts on `closedByServer`). */
  waitMs?: number;
  /** Pause between chunks: a trickling client. */
  intervalMs?: number;
  /** Half-close the connection after the last chunk (a client that sent all it will send). */
  end?: boolean;
}

/**
 * Writes `chunks` to a fresh connection (each once the previous was written) and reads until the
 * server closes the connection.
 */
export function rawExchange(port: number, chunks: (string | Buffer)[], options: RawExchangeOptions = {}): Promise<RawExchange> {
  const { waitMs = 10_000, intervalMs = 0, end = false } = options;
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    let settled = false;
    let pacing: NodeJS.Timeout | undefined;
    const finish = (closedByServer: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(ceiling);
      clearTimeout(pacing);
      socket.destroy();
      const text = Buffer.concat(received).toString('latin1');
      resolve({ received: text, ...parseFirstResponse(text), closedByServer });
    };
    const ceiling = setTimeout(() => finish(false), waitMs);
    socket.on('data', (data) => received.push(data));
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // A reset after the answer arrived is a close; before it, the exchange failed.
      if (received.length > 0 || error.code === 'ECONNRESET' || error.code === 'EPIPE') finish(true);
      else if (!settled) {
        settled = true;
        clearTimeout(ceiling);
        clearTimeout(pacing);
        reject(error);
      }
    });
    socket.once('connect', () => {
      const writeNext = (i: number) => {
        if (socket.destroyed) return;
        if (i >= chunks.length) {
          if (end) socket.end();
          return;
        }
        socket.write(chunks[i]!, () => {
          if (intervalMs === 0) writeNext(i + 1);
          else pacing = setTimeout(() => writeNext(i + 1), intervalMs);
        });
      };
      writeNext(0);
    });
  });
}
