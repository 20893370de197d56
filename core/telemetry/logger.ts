import { isMainThread } from 'node:worker_threads';
import { pino, type DestinationStream, type Logger } from 'pino';

/** Shown in place of anything redacted. */
export const redactedMarker = '[redacted]';

/** Header names that carry credentials, wherever a headers object is logged. */
const credentialHeaders = ['authorization', 'x-api-key', 'cookie', 'set-cookie', 'proxy-authorization'];
/** Object keys that hold secrets, logged by mistake or inside a bigger object. */
const secretKeys = ['apiKey', 'api_key', 'secret', 'password', 'adminKey', 'pepper', 'token', 'access_token', 'refresh_token'];
/** Keys that hold prompt or completion text. */
const promptKeys = ['prompt', 'messages', 'system', 'instructions', 'input', 'content', 'completion'];

/** `key` at the top level and one object deep (pino's wildcards match one level). */
const anywhereShallow = (key: string) => [key, `*.${key}`];
const inHeaders = (header: string) => ['headers', '*.headers', 'req.headers'].map((parent) => `${parent}["${header}"]`);

/** The paths pino removes from every line; prompt keys only when prompt logging is off. */
export function redactionPaths(logPromptContent: boolean): string[] {
  return [
    ...credentialHeaders.flatMap(inHeaders),
    ...secretKeys.flatMap(anywhereShallow),
    ...(logPromptContent ? [] : promptKeys.flatMap(anywhereShallow)),
  ];
}

/** Options of createLogger. */
export interface LoggerOptions {
  /** `service` field of every line: gateway, operator, portal. */
  service: string;
  level: string;
  /**
   * Whether prompt and completion text may appear in logs (SVC_LOG_PROMPTS). Off by default:
   * prompts are customer data, and a log pipeline is rarely cleared to hold it.
   */
  logPromptContent?: boolean;
  /** Default: asynchronous stdout (a synchronous write per line costs more than the rest of logging). */
  destination?: DestinationStream;
}

/**
 * The structured JSON logger of a deployable, with credentials and (unless enabled) prompt
 * text redacted from every line, whatever object a caller hands it.
 */
export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      level: options.level,
      base: { service: options.service },
      redact: { paths: redactionPaths(options.logPromptContent ?? false), censor: redactedMarker },
    },
    options.destination ?? bufferedStdout(),
  );
}

/** How long a line may wait in the stdout buffer before it is written anyway. */
const logFlushIntervalMs = 200;

/** The process's buffered stdout, made on first use. */
let stdout: FlushableDestination | undefined;

/** What bufferedStdout hands pino: a destination that can also be flushed, as sonic-boom can. */
type FlushableDestination = DestinationStream & { flush(cb?: (error?: Error) => void): void; flushSync(): void };

/**
 * Asynchronous stdout that writes in chunks of at least 4 KiB, and at least every 200 ms: under
 * load a write per line or two (one `fs.write` each, with its thread-pool round trip) cost the
 * gateway several per cent of its CPU. pino flushes the buffer when the process exits.
 */
function bufferedStdout(): FlushableDestination {
  // pino flushes asynchronous destinations at exit on the main thread only: a worker thread's
  // lines are written as they come.
  if (!isMainThread) return pino.destination({ dest: 1, sync: false });
  if (stdout) return stdout; // one buffer and one timer per process, however many loggers
  const stream = linesAsBytes(pino.destination({ dest: 1, sync: false, minLength: 4096, contentMode: 'buffer' }));
  stdout = stream;
  setInterval(() => {
    // flush() throws while the file descriptor is still opening or after the stream ended.
    try {
      stream.flush();
    } catch {
      // nothing to flush
    }
  }, logFlushIntervalMs).unref();
  return stream;
}

/**
 * Each line handed to sonic-boom as bytes. In its text mode sonic-boom appends every line to
 * the chunk it is gathering and measures the chunk's byte length again, which copies the whole
 * growing chunk into a flat string on every line (`Buffer.byteLength` under pino's write: 3.6 KB
 * per request, 5 % of the gateway's serving-thread allocation) (`BENCH_PROFILE=alloc npx tsx bench/profile/run.ts`). In byte mode
 * it keeps a list of buffers with their lengths and joins them once per write. sonic-boom itself
 * (the one pino flushes at exit) stays the owner of everything not yet written.
 */
function linesAsBytes(sonic: ReturnType<typeof pino.destination>): FlushableDestination {
  return {
    write: (line: string) => sonic.write(Buffer.from(line) as unknown as string),
    flush: (cb?: (error?: Error) => void) => sonic.flush(cb),
    flushSync: () => sonic.flushSync(),
  };
}

/**
 * The logger for the per-request access line: the same destination, level and base fields as
 * `logger`, without the redaction pass. That line is assembled from known-safe values only
 * (ids, names, counts, durations), and the wildcard redaction every other line pays for was ~5 %
 * of the gateway's CPU under load (bench/profile). With prompt logging on, the line carries the
 * request body, so it keeps the redacting logger (credentials inside a body stay masked).
 */
export function accessLoggerOf(logger: Logger, logPromptContent: boolean): Logger {
  if (logPromptContent) return logger;
  const destination = (logger as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym];
  if (!destination) return logger;
  return pino({ level: logger.level, base: logger.bindings() }, destination);
}
