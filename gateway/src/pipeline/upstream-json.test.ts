import { describe, expect, test } from 'vitest';
import type { ModelRoute } from '../../../core/config/index.js';
import { ApiError } from '../../../core/errors/index.js';
import { createTranslator } from '../translate/factory.js';
import { isFailoverable, isGatewayFault } from './failover.js';
import { readSupplierAnswer } from './upstream-json.js';

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
