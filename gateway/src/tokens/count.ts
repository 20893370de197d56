import { Worker } from 'node:worker_threads';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../../core/errors/index.js';
import { threadModule } from '../audit/writer-thread.js';
import { largestContextWindow } from '../routing/cost.js';
import { isServerToolBlock, type CountTokensRequest, type MessagesRequest } from '../interfaces/messages/schema.js';
import type { CountAnswer, CountCall } from './count-protocol.js';
import type { Countable } from './tokenizer.js';

export type { Countable } from './tokenizer.js';

/** A count waiting for its answer. */
interface PendingCount {
  resolve(tokens: number): void;
  reject(error: Error): void;
}

/** One counter thread and the counts sent to it (a thread that ends fails only its own). */
interface CounterThread {
  worker: Worker;
  calls: Map<number, PendingCount>;
  /** Why it ended: by stop() (no pause before the next start), or by a failure. */
  ended: 'stopped' | 'failed' | undefined;
}

/** After a thread fails, counts fail at once for this long before another thread is started. */
const restartPauseMs = 1_000;

/**
 * The serving thread's side of local token counting: counts run in one worker thread that holds
 * the tokenizer (tokenizer.ts). On the serving thread's heap, the tokenizer's merge ranks were
 * most of the long-lived strings that every full collection marked again (under the overhead
 * load: ~60 MB live, full collections every ~3 s; with the thread, 5 instead of 8 per 30 s and
 * 67 instead of 182 ms of pauses; bench/RESULTS.md). A large count no longer takes turns with
 * requests on the serving event loop either. The thread has its own heap: ~30 MB more RSS
 * per process (measured: a worker with the tokenizer loaded, Node 22).
 *
 * The thread starts on the first count (or `warm()`, at gateway start) and does not keep the
 * process alive while idle. If it dies, the counts sent to it fail with internal_error; the next
 * count starts a new thread, after a pause of a second if it failed (a thread that cannot start
 * is not started again for every request).
 */
class TokenCounter {
  private current: CounterThread | undefined;
  private nextId = 0;
  private pausedUntil = 0;
  private lastFailure: Error | undefined;

  constructor(private readonly module: () => { url: URL; entry?: string } = () => threadModule('../tokens/count-worker')) {}

  /** Starts the thread now, so the first request that counts does not wait for it. */
  warm(): void {
    try {
      this.thread();
    } catch {
      // The first count reports it.
    }
  }

  count(items: Countable[], stopAbove: number): Promise<number> {
    let thread: CounterThread;
    try {
      thread = this.thread();
    } catch (cause) {
      return Promise.reject(new ApiError('internal_error', { cause }));
    }
    const id = this.nextId++;
    return new Promise<number>((resolve, reject) => {
      thread.calls.set(id, { resolve, reject });
      thread.worker.ref();
      thread.worker.postMessage({ id, items, stopAbove } satisfies CountCall);
    });
  }

  /** Ends the thread (gateway shutdown); its counts in flight fail, a later count starts a new one. */
  async stop(): Promise<void> {
    const thread = this.current;
    if (!thread) return;
    this.current = undefined;
    thread.ended = 'stopped';
    await thread.worker.terminate();
  }

  private thread(): CounterThread {
    if (this.current) return this.current;
    if (Date.now() < this.pausedUntil) {
      throw new Error(`the token counter thread failed less than ${restartPauseMs} ms ago: ${this.lastFailure?.message}`, {
        cause: this.lastFailure,
      });
    }
    const { url, entry } = this.module();
    const worker = new Worker(url, { workerData: entry ? { entry } : {} });
    worker.unref();
    const thread: CounterThread = { worker, calls: new Map(), ended: undefined };
    worker.on('message', (answer: CountAnswer) => {
      const call = thread.calls.get(answer.id);
      thread.calls.delete(answer.id);
      if (thread.calls.size === 0) worker.unref();
      if (!call) return;
      if ('tokens' in answer) call.resolve(answer.tokens);
      else call.reject(new ApiError('internal_error', { cause: new Error(`token counting failed: ${answer.error}`) }));
    });
    const fail = (cause: Error) => {
      if (this.current === thread) this.current = undefined;
      // A failure is reported twice ('error', then 'exit'): the first one sets the pause.
      if (thread.ended === undefined) {
        thread.ended = 'failed';
        this.pausedUntil = Date.now() + restartPauseMs;
        this.lastFailure = cause;
      }
      for (const call of thread.calls.values()) call.reject(new ApiError('internal_error', { cause }));
      thread.calls.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the token counter thread exited with code ${code}`)));
    this.current = thread;
    return thread;
  }
}

/** The process's one token counter thread. */
export const tokenCounter = new TokenCounter();

/** A counter running another thread module (tests: a stand-in that fails). */
export function tokenCounterWith(module: { url: URL; entry?: string }): TokenCounter {
  return new TokenCounter(() => module);
}

/** Tokens of all the items, stopping once the total exceeds `stopAbove` (the result is then some number above it). */
export function countTokensSliced(items: Iterable<Countable>, stopAbove = Number.POSITIVE_INFINITY): Promise<number> {
  return tokenCounter.count([...items], stopAbove);
}

/**
 * A count of what a supplier answered without reporting usage; if the counter fails, the bound
 * the reservation was made with (bytes: a token covers at least one), logged. The supplier has
 * answered and billed: its answer goes to the client and is charged, never lost to a 500.
 */
export async function countOrBound(count: () => Promise<number>, bound: number, request: FastifyRequest): Promise<number> {
  try {
    return await count();
  } catch (error) {
    request.log.warn({ err: error, request_id: request.id }, 'token count failed; usage charged at the reserved bound');
    return bound;
  }
}

/** Most tokens counted for a model whose context window the catalogue does not give (the largest windows offered today). */
export const maxCountedTokens = largestContextWindow;

/** Tokens charged for an image whose size is unknown (Anthropic's figure for ~1.15 megapixels). */
export const imageTokenEstimate = 1_600;
/** Per-message framing tokens (role markers), as chat tokenizers add them. */
export const perMessageTokens = 3;

type Content = MessagesRequest['messages'][number]['content'];

function* contentItems(content: Content): Generator<Countable> {
  if (typeof content === 'string') {
    yield content;
    return;
  }
  for (const block of content) {
    switch (block.type) {
      case 'text':
        yield block.text;
        break;
      case 'image':
      case 'document':
        yield imageTokenEstimate;
        break;
      case 'tool_use':
        yield block.name;
        yield JSON.stringify(block.input);
        break;
      case 'tool_result':
        if (block.content !== undefined) yield* contentItems(block.content as Content);
        break;
      case 'thinking':
        yield block.thinking;
        break;
      case 'redacted_thinking':
        break;
      case 'search_result':
        yield block.title;
        yield block.source;
        for (const part of block.content) yield part.text;
        break;
      default: {
        // A server tool's block (web search results, code execution output …): its whole JSON, roughly its tokens.
        if (isServerToolBlock(block)) {
          yield JSON.stringify(block);
          break;
        }
        const unreachable: never = block;
        throw new Error(`unknown block ${JSON.stringify(unreachable)}`);
      }
    }
  }
}

/** What a messages-style request's input tokens are made of: system, messages and tool definitions. */
export function* messagesItems(request: CountTokensRequest): Generator<Countable> {
  if (typeof request.system === 'string') yield request.system;
  else if (request.system) for (const block of request.system) yield block.text;
  for (const message of request.messages) {
    yield perMessageTokens;
    yield* contentItems(message.content);
  }
  if (request.tools) yield JSON.stringify(request.tools);
}

/** Input tokens of a messages-style request (sliced; stops above `stopAbove`, see countTokensSliced). */
export function countMessagesTokens(request: CountTokensRequest, stopAbove?: number): Promise<number> {
  return countTokensSliced(messagesItems(request), stopAbove);
}
