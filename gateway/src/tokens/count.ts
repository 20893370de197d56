import { Worker } from 'node:worker_threads';
import { ApiError } from '../../../core/errors/index.js';
import { threadModule } from '../audit/writer-thread.js';
import type { CountTokensRequest, MessagesRequest } from '../interfaces/messages/schema.js';
import type { CountAnswer, CountCall } from './count-protocol.js';
import type { Countable } from './tokenizer.js';

export type { Countable } from './tokenizer.js';

/**
 * The serving thread's side of local token counting: counts run in one worker thread that holds
 * the tokenizer (tokenizer.ts). Measured under the overhead load (bench/RESULTS.md): with the
 * tokenizer's merge ranks on the serving thread's heap, every full collection marked them again,
 * and the gateway spent ~9 % more CPU per request on chat completions that never count a token.
 * Off the serving thread, a large count no longer takes turns with requests on its event loop either.
 *
 * The thread starts on the first count (or `warm()`, at gateway start) and does not keep the
 * process alive while idle. If it dies, the counts in flight fail with internal_error and the
 * next count starts a new one.
 */
class TokenCounter {
  private worker: Worker | undefined;
  private readonly calls = new Map<number, { resolve: (tokens: number) => void; reject: (error: Error) => void }>();
  private nextId = 0;

  /** Starts the thread now, so the first request that counts does not wait for it. */
  warm(): void {
    this.thread();
  }

  count(items: Countable[], stopAbove: number): Promise<number> {
    const id = this.nextId++;
    return new Promise<number>((resolve, reject) => {
      this.calls.set(id, { resolve, reject });
      const worker = this.thread();
      worker.ref();
      worker.postMessage({ id, items, stopAbove } satisfies CountCall);
    });
  }

  /** Ends the thread (gateway shutdown); counts in flight fail, a later count starts a new one. */
  async stop(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const { url, entry } = threadModule('../tokens/count-worker');
    const worker = new Worker(url, { workerData: entry ? { entry } : {} });
    worker.unref();
    worker.on('message', (answer: CountAnswer) => {
      const call = this.calls.get(answer.id);
      if (!call) return;
      this.calls.delete(answer.id);
      if (this.calls.size === 0) worker.unref();
      if ('tokens' in answer) call.resolve(answer.tokens);
      else call.reject(new ApiError('internal_error', { cause: new Error(`token counting failed: ${answer.error}`) }));
    });
    const fail = (cause: Error) => {
      if (this.worker === worker) this.worker = undefined;
      for (const call of this.calls.values()) call.reject(new ApiError('internal_error', { cause }));
      this.calls.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the token counter thread exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }
}

/** The process's one token counter thread. */
export const tokenCounter = new TokenCounter();

/** Tokens of all the items, stopping once the total exceeds `stopAbove` (the result is then some number above it). */
export function countTokensSliced(items: Iterable<Countable>, stopAbove = Number.POSITIVE_INFINITY): Promise<number> {
  return tokenCounter.count([...items], stopAbove);
}

/** Tokens of the texts, all counted. */
export function countTexts(texts: Iterable<string>): Promise<number> {
  return countTokensSliced(texts);
}

/** Most tokens counted for a model whose context window the catalogue does not give (the largest windows offered today). */
export const maxCountedTokens = 2_000_000;

/** Tokens charged for an image whose size is unknown (Anthropic's figure for ~1.15 megapixels). */
export const imageTokenEstimate = 1_600;
/** Per-message framing tokens (role markers), as chat tokenizers add them. */
const perMessageTokens = 3;

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
      default: {
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
