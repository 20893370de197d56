import { Readable } from 'node:stream';
import { describe, expect, test } from 'vitest';
import type { ModelRoute } from '../../../core/config/index.js';
import { ApiError } from '../../../core/errors/index.js';
import { createTranslator } from '../translate/factory.js';
import { isFailoverable, isGatewayFault } from './failover.js';
import { readJson, readSupplierAnswer } from './upstream-json.js';
import { errors as undiciErrors } from 'undici';

// Just what the Anthropic-client → OpenAI-supplier translator reads from its route.
const route = { supplier: { name: 'sup-a', protocol: 'openai' }, model: { id: 'm', upstreamModel: 'u' } } as unknown as ModelRoute;

function anthropicClientOnOpenAi() {
  const translator = createTranslator(
    { family: 'anthropic', body: { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] } } as never,
    'openai',
    { route, publicModel: 'm', defaultMaxTokens: 5 },
  );
  translator.request();
  return translator;
}

function caught(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('readSupplierAnswer', () => {
  test('a supplier answer the translator trips over (choices: [null]) is the supplier fault, so it fails over', () => {
    const translator = anthropicClientOnOpenAi();
    const error = caught(() => readSupplierAnswer('sup-a', () => translator.response({ choices: [null] })));
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe('invalid_backend_response');
    expect((error as ApiError).status).toBe(502);
    expect(isGatewayFault(error)).toBe(false);
    expect(isFailoverable(error as ApiError)).toBe(true);
  });

  test('a stream chunk the translator trips over (choices: [null]) is the supplier fault too', () => {
    const translator = anthropicClientOnOpenAi();
    const error = caught(() => readSupplierAnswer('sup-a', () => translator.streamEvent({ data: '{"choices":[null]}' })));
    expect((error as ApiError).code).toBe('invalid_backend_response');
    expect(isGatewayFault(error)).toBe(false);
  });

  test('catalogue errors pass through unchanged', () => {
    const own = new ApiError('provider_timeout');
    expect(
      caught(() =>
        readSupplierAnswer('sup-a', () => {
          throw own;
        }),
      ),
    ).toBe(own);
  });
});

describe('readJson', () => {
  /** A supplier answer whose body yields `chunks`, then fails with `failure` (if given). */
  const answer = (chunks: string[], failure?: unknown, headers: Record<string, string> = {}) => {
    const body = Readable.from(
      (async function* () {
        for (const chunk of chunks) yield Buffer.from(chunk);
        if (failure !== undefined) throw failure;
      })(),
    );
    return { statusCode: 200, headers, body } as never;
  };
  const read = (failure: unknown) => readOf(answer([], failure));
  const readOf = (upstream: never, limit = 1024) =>
    readJson(upstream, route, limit).then(
      () => undefined,
      (e: unknown) => e as ApiError,
    );

  test('a body that is not JSON is non_json_provider_response', async () => {
    expect((await readOf(answer(['<html>proxy error</html>'])))?.code).toBe('non_json_provider_response');
  });

  test('JSON arriving in pieces is read whole', async () => {
    await expect(readJson(answer(['{"a":', '"é', '"}']), route, 1024)).resolves.toEqual({ a: 'é' });
  });

  test("an answer past the limit — declared or as it arrives — is the supplier's failure, and fails over", async () => {
    const declared = await readOf(answer(['{}'], undefined, { 'content-length': '5000' }));
    expect(declared?.code).toBe('invalid_backend_response');
    expect(isFailoverable(declared!)).toBe(true);
    const arriving = await readOf(answer(['{"a":"', 'x'.repeat(600), 'x'.repeat(600), '"}']));
    expect(arriving?.code).toBe('invalid_backend_response');
    expect(arriving?.humanMessage).toContain('sup-a answered with more than');
  });

  test('a body that stopped arriving is a timeout or an unavailable supplier, both retryable, never "not JSON"', async () => {
    const timedOut = await read(new undiciErrors.BodyTimeoutError());
    expect(timedOut?.code).toBe('provider_timeout');
    expect(timedOut?.retryable).toBe(true);
    const reset = await read(new undiciErrors.SocketError('other side closed'));
    expect(reset?.code).toBe('provider_unavailable');
    expect(reset?.retryable).toBe(true);
    // The attempt's own deadline reaches here as the signal's reason: kept as it is.
    const deadline = new ApiError('provider_timeout', { humanMessage: 'Supplier sup-a did not finish within 10 ms' });
    expect(await read(deadline)).toBe(deadline);
  });
});
