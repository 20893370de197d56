// The supplier simulator: a plain node:http server speaking OpenAI's and Anthropic's wire
// formats, with fault injection and request recording. It doubles as the no-gateway baseline of
// the overhead benchmark, so the per-request path does only: route lookup, body read + parse,
// a header copy for the recording, and the handler.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { handleAdmin } from './admin.js';
import { handleCountTokens, handleMessages } from './anthropic-messages.js';
import { handleSpeech, handleTranscription } from './audio.js';
import { newId } from './deterministic.js';
import { handleEmbeddings } from './embeddings.js';
import { type Exchange, type Family, faultMessage, sendError, sendJson } from './http.js';
import { handleModels } from './models.js';
import { MultipartError, type MultipartUpload, parseMultipart } from './multipart.js';
import { handleChatCompletions } from './openai-chat.js';
import { handleRerank } from './rerank.js';
import { handleResponses } from './responses.js';
import type { RecordedRequest, RunningSimulator, SimulatorFaults, SimulatorOptions } from './types.js';

/** The public types, so callers import everything from server.js. */
export type { RecordedRequest, RunningSimulator, SimulatorFaults, SimulatorOptions } from './types.js';

const MAX_RECORDED = 200;
const MAX_JSON_BYTES = 32 << 20;
const MAX_UPLOAD_BYTES = 25 << 20;

type Route =
  | { family: Family; kind: 'json'; handle: (ex: Exchange, body: unknown) => void }
  | { family: Family; kind: 'multipart'; handle: (ex: Exchange, upload: MultipartUpload) => void }
  | { family: Family; kind: 'none'; handle: (ex: Exchange) => void };

const ROUTES = new Map<string, Route>([
  ['POST /v1/chat/completions', { family: 'openai', kind: 'json', handle: handleChatCompletions }],
  ['POST /v1/messages', { family: 'anthropic', kind: 'json', handle: handleMessages }],
  ['POST /v1/messages/count_tokens', { family: 'anthropic', kind: 'json', handle: handleCountTokens }],
  ['POST /v1/responses', { family: 'openai', kind: 'json', handle: handleResponses }],
  ['POST /v1/embeddings', { family: 'openai', kind: 'json', handle: handleEmbeddings }],
  ['POST /v1/rerank', { family: 'openai', kind: 'json', handle: handleRerank }],
  ['POST /v1/audio/speech', { family: 'openai', kind: 'json', handle: handleSpeech }],
  ['POST /v1/audio/transcriptions', { family: 'openai', kind: 'multipart', handle: handleTranscription }],
  ['GET /v1/models', { family: 'openai', kind: 'none', handle: handleModels }],
]);

/** Thrown by readJson for bodies over MAX_JSON_BYTES. */
class TooLarge extends Error {}

/** Starts a simulator; resolves once it listens. */
export async function startSimulator(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  const host = options.host ?? '127.0.0.1';
  const sim = new Simulator(options);
  const sockets = new Set<Socket>();
  const server = createServer({ noDelay: true }, (req, res) => sim.handle(req, res));
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  // A client that resets mid-request must not crash the process.
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : (options.port ?? 0);
  let closing: Promise<void> | null = null;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    name: sim.name,
    requests: sim.requests,
    setFaults: (f) => sim.setFaults(f),
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Keep-alive, streaming and hung sockets would otherwise hold close() open.
        for (const socket of sockets) socket.destroy();
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

class Simulator {
  readonly name: string;
  readonly requests: RecordedRequest[] = [];
  private readonly apiKey: string | undefined;
  private readonly dims: number;
  private faults: SimulatorFaults | undefined;
  /** Requests that got the instance status fault since the last setFaults (for failFirst). */
  private failed = 0;

  constructor(options: SimulatorOptions) {
    this.name = options.name ?? 'sim';
    this.apiKey = options.apiKey || undefined;
    this.dims = options.embeddingDimensions ?? 16;
    this.setFaults(options.faults);
  }

  setFaults(f: SimulatorFaults | undefined): void {
    this.faults = f ? { ...f } : undefined;
    this.failed = 0;
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const method = req.method ?? 'GET';
    const route = ROUTES.get(`${method} ${path}`);
    const family: Family = route?.family ?? (path.startsWith('/v1/messages') ? 'anthropic' : 'openai');
    const requestId = newId('req_');
    const ex: Exchange = {
      req,
      res,
      family,
      headers: {
        'x-sim-instance': this.name,
        [family === 'anthropic' ? 'request-id' : 'x-request-id']: requestId,
      },
      cutAfter: headerInt(req, 'x-sim-cut-after') ?? this.faults?.cutAfterEvents,
      embeddingDimensions: this.dims,
    };

    if (path === '/health') {
      req.resume();
      return sendJson(ex, 200, { status: 'ok' });
    }
    if (path.startsWith('/_sim/')) {
      if (method !== 'POST' && method !== 'PUT') {
        req.resume();
        return handleAdmin(this.admin, ex, method, path, undefined);
      }
      readJson(req).then(
        (body) => handleAdmin(this.admin, ex, method, path, body),
        () => sendError(ex, 400, 'We could not parse the JSON body of your request.'),
      );
      return;
    }
    if (!route) {
      req.resume();
      this.record(req, method, path, null);
      return sendError(ex, 404, `Invalid URL (${method} ${path})`);
    }
    if (route.kind === 'none') {
      req.resume();
      this.record(req, method, path, null);
      return this.afterLatency(ex, () => route.handle(ex));
    }
    if (route.kind === 'multipart') {
      parseMultipart(req, MAX_UPLOAD_BYTES).then(
        (upload) => {
          this.record(req, method, path, {
            fields: upload.fields,
            ...(Object.keys(upload.repeated).length > 0 && { repeated: upload.repeated }),
            fileBytes: upload.fileBytes,
            filename: upload.filename,
          });
          this.afterLatency(ex, () => route.handle(ex, upload));
        },
        (err: unknown) => {
          this.record(req, method, path, null);
          const status = err instanceof MultipartError ? err.status : 400;
          // The rest of an oversized upload is not worth reading: close after answering.
          sendError(ex, status, err instanceof Error ? err.message : 'Invalid multipart body', {
            headers: { connection: 'close' },
          });
        },
      );
      return;
    }
    readJson(req).then(
      (body) => {
        this.record(req, method, path, body);
        this.afterLatency(ex, () => route.handle(ex, body));
      },
      (err: unknown) => {
        if (err instanceof TooLarge) {
          this.record(req, method, path, null);
          return sendError(ex, 413, 'Request body too large.', {
            type: family === 'anthropic' ? 'request_too_large' : undefined,
            headers: { connection: 'close' },
          });
        }
        this.record(req, method, path, err instanceof BadJson ? err.text : null);
        sendError(ex, 400, 'We could not parse the JSON body of your request.');
      },
    );
  }

  /** Admin view of this instance (faults and recordings). */
  private readonly admin = {
    getFaults: () => this.faults,
    setFaults: (f: SimulatorFaults | undefined) => this.setFaults(f),
    requests: this.requests,
  };

  /** Waits the latency fault (cancelled if the client leaves), then runs the fault checks and the handler. */
  private afterLatency(ex: Exchange, handler: () => void): void {
    const latency = headerInt(ex.req, 'x-sim-latency-ms') ?? this.faults?.latencyMs ?? 0;
    if (latency <= 0) return this.respond(ex, handler);
    const timer = setTimeout(() => this.respond(ex, handler), latency);
    ex.res.once('close', () => clearTimeout(timer));
  }

  private respond(ex: Exchange, handler: () => void): void {
    const { req, res } = ex;
    if (res.destroyed) return;
    const hangHeader = req.headers['x-sim-hang'];
    const hang = hangHeader === undefined ? this.faults?.hang === true : hangHeader === '1' || hangHeader === 'true';
    // A hung request is simply never answered; close() or the client's abort ends the socket.
    if (hang) return;
    if (this.apiKey !== undefined && !this.authorised(req)) {
      return sendError(ex, 401, ex.family === 'anthropic' ? 'invalid x-api-key' : 'Incorrect API key provided.');
    }
    const status = this.statusFault(req);
    if (status !== undefined) {
      const retryAfter = headerInt(req, 'x-sim-retry-after') ?? this.faults?.retryAfterSeconds;
      const headers = status === 429 || retryAfter !== undefined ? { 'retry-after': String(retryAfter ?? 1) } : undefined;
      return sendError(ex, status, faultMessage(ex.family, status), { headers });
    }
    handler();
  }

  private authorised(req: IncomingMessage): boolean {
    return req.headers.authorization === `Bearer ${this.apiKey}` || req.headers['x-api-key'] === this.apiKey;
  }

  /** The status fault for this request: the header wins; the instance fault honours failFirst. */
  private statusFault(req: IncomingMessage): number | undefined {
    const header = req.headers['x-sim-status'];
    if (typeof header === 'string' && header !== '') {
      const n = Number(header);
      return Number.isInteger(n) && n >= 400 && n <= 599 ? n : undefined;
    }
    const status = this.faults?.status;
    if (status === undefined) return undefined;
    const limit = this.faults?.failFirst;
    if (limit !== undefined) {
      if (this.failed >= limit) return undefined;
      this.failed++;
    }
    return status;
  }

  private record(req: IncomingMessage, method: string, path: string, body: unknown): void {
    const headers: Record<string, string> = {};
    const h = req.headers;
    for (const key in h) {
      const v = h[key];
      if (v !== undefined) headers[key] = Array.isArray(v) ? v.join(', ') : v;
    }
    this.requests.push({ method, path, headers, body, at: Date.now() });
    if (this.requests.length > MAX_RECORDED) this.requests.shift();
  }
}

/** Invalid JSON, keeping the raw text for the recording. */
class BadJson extends Error {
  constructor(readonly text: string) {
    super('invalid JSON');
  }
}

/** Reads and parses a JSON body. */
function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      if (tooLarge) return;
      size += chunk.length;
      if (size > MAX_JSON_BYTES) {
        tooLarge = true;
        chunks.length = 0;
        reject(new TooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (tooLarge) return;
      const text = chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8');
      try {
        resolve(JSON.parse(text) as unknown);
      } catch {
        reject(new BadJson(text));
      }
    });
    req.on('error', reject);
  });
}

/** A non-negative integer from a request header; undefined when absent or invalid. */
function headerInt(req: IncomingMessage, name: string): number | undefined {
  const v = req.headers[name];
  if (typeof v !== 'string' || v === '') return undefined;
  const n = Number(v);
  return Number.isFinite(n) && n >= 0 ? Math.floor(n) : undefined;
}
