import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { APIError as AnthropicAPIError } from '@anthropic-ai/sdk';
import { APIError as OpenAIAPIError } from 'openai';
import { ApiError, errorResponseHeaders, maxErrorTextChars, renderErrorBody, splitFormattedMessage, toApiError } from './api-error.js';
import { errorCatalogue } from './catalogue.js';

describe('ApiError', () => {
  it('formats the message as `<code> - <human message>` from the catalogue', () => {
    const error = new ApiError('model_not_found');
    assert.equal(error.code, 'model_not_found');
    assert.equal(error.status, 404);
    assert.equal(error.type, 'not_found_error');
    assert.equal(error.humanMessage, errorCatalogue.model_not_found.message);
    assert.equal(error.message, `model_not_found - ${errorCatalogue.model_not_found.message}`);
    assert.equal(error.name, 'ApiError');
    assert.equal(error.retryable, false);
    assert.ok(error instanceof Error);
    assert.equal('cause' in error, false);
  });

  it('takes a specific human message, param, retry-after, details and cause', () => {
    const cause = new Error('socket hang up');
    const error = new ApiError('rate_limit_exceeded', {
      humanMessage: 'Key sk-1 may send 60 requests per minute',
      param: 'model',
      retryAfterSeconds: 12,
      details: { limit_rpm: 60 },
      cause,
    });
    assert.equal(error.message, 'rate_limit_exceeded - Key sk-1 may send 60 requests per minute');
    assert.equal(error.humanMessage, 'Key sk-1 may send 60 requests per minute');
    assert.equal(error.param, 'model');
    assert.equal(error.retryAfterSeconds, 12);
    assert.deepEqual(error.details, { limit_rpm: 60 });
    assert.equal(error.cause, cause);
    assert.equal(error.status, 429);
    assert.equal(error.retryable, true);
  });

  it('takes the actual response status, with the type following it', () => {
    const error = new ApiError('upstream_error', { status: 529 });
    assert.equal(error.status, 529);
    assert.equal(error.type, 'overloaded_error');
    assert.equal(error.retryable, true);
  });

  it('keeps a dynamic provider code and status unchanged', () => {
    const error = ApiError.fromProvider('overloaded_error', 529, 'Overloaded', { retryAfterSeconds: 5 });
    assert.equal(error.code, 'overloaded_error');
    assert.equal(error.status, 529);
    assert.equal(error.type, 'overloaded_error');
    assert.equal(error.retryable, true);
    assert.equal(error.message, 'overloaded_error - Overloaded');
    assert.equal(error.retryAfterSeconds, 5);

    const jsonRpc = ApiError.fromProvider('-32602', 400, 'Invalid params');
    assert.equal(jsonRpc.code, '-32602');
    assert.equal(jsonRpc.type, 'invalid_request_error');
    assert.equal(jsonRpc.retryable, false);
  });

  it('gives a provider error reported with a non-error status a 502', () => {
    const error = ApiError.fromProvider('weird', 200, 'Reported failure in a 200');
    assert.equal(error.status, 502);
    assert.equal(error.type, 'api_error');
  });

  // A 4xx stack is never logged and capturing it was most of a bad request's cost; a 5xx's is
  // what an operator reads in the "request failed" line.
  it('captures no stack frames for client errors and keeps them for server errors, leaving the limit as it was', () => {
    const limit = Error.stackTraceLimit;
    const frames = (error: Error) => (error.stack ?? '').split('\n').filter((line) => line.trimStart().startsWith('at ')).length;
    const clientErrors = [
      new ApiError('validation_error'),
      new ApiError('invalid_api_key'),
      new ApiError('rate_limit_exceeded'),
      ApiError.fromProvider('too_many', 429, 'slow down'),
    ];
    for (const error of clientErrors) {
      assert.ok(error.status < 500, error.code);
      assert.equal(frames(error), 0, `${error.code}: ${error.stack}`);
      assert.match(error.stack ?? '', /^ApiError: /);
    }
    const serverErrors = [
      new ApiError('internal_error'),
      new ApiError('provider_unavailable'),
      new ApiError('validation_error', { status: 503 }),
      ApiError.fromProvider('overloaded', 529, 'busy'),
    ];
    for (const error of serverErrors) {
      assert.ok(error.status >= 500, error.code);
      assert.ok(frames(error) > 0, `${error.code}: ${error.stack}`);
    }
    assert.equal(Error.stackTraceLimit, limit);
    assert.ok(frames(new Error('plain')) > 0, 'other errors keep their stacks');
  });
});

describe('text quoted from the input', () => {
  it('is clipped in the human message, param and details, so a huge model id is not echoed back whole', () => {
    const model = 'm'.repeat(2_000_000);
    const error = new ApiError('model_not_found', {
      humanMessage: `The model ${model} does not exist`,
      param: `f${model}`,
      details: { model, supplier: 'sim' },
    });
    const rendered = JSON.stringify(renderErrorBody(error, 'req_1'));
    assert.ok(rendered.length < 5 * maxErrorTextChars, `${rendered.length} characters`);
    assert.match(error.humanMessage, /^The model m+… \(\d+ more characters\)$/);
    assert.equal(error.humanMessage.length < maxErrorTextChars + 40, true);
    assert.equal(error.details?.supplier, 'sim');
    assert.match(String(error.details?.model), /more characters\)$/);
  });

  it('is left whole up to the limit, and never cut inside a surrogate pair', () => {
    const exact = 'x'.repeat(maxErrorTextChars);
    assert.equal(new ApiError('invalid_request', { humanMessage: exact }).humanMessage, exact);
    const emoji = `${'x'.repeat(maxErrorTextChars - 1)}😀tail`;
    const clipped = new ApiError('invalid_request', { humanMessage: emoji }).humanMessage;
    assert.ok(clipped.startsWith(`${'x'.repeat(maxErrorTextChars - 1)}…`), clipped.slice(-30));
    assert.doesNotMatch(clipped, /[\ud800-\udbff](?![\udc00-\udfff])/);
  });
});

describe('renderErrorBody', () => {
  it('renders the shape both SDK families read, with the request id in both places', () => {
    const error = new ApiError('invalid_json', { param: 'messages', retryAfterSeconds: 3, details: { offset: 17 } });
    assert.deepEqual(renderErrorBody(error, 'req_1'), {
      type: 'error',
      error: {
        code: 'invalid_json',
        type: 'invalid_request_error',
        message: `invalid_json - ${errorCatalogue.invalid_json.message}`,
        human_message: errorCatalogue.invalid_json.message,
        param: 'messages',
        retryable: false,
        details: { offset: 17, error_code: 'invalid_json' },
        request_id: 'req_1',
        retry_after_seconds: 3,
      },
      request_id: 'req_1',
    });
  });

  it('quotes request text with lone surrogates replaced, so strict JSON parsers read the refusal', () => {
    const error = new ApiError('validation_error', {
      param: 'metadata.\ud800',
      humanMessage: 'unknown model "x\udc00" 😀',
      details: { model: 'x\ud800', count: 2 },
    });
    const body = renderErrorBody(error);
    assert.equal(body.error.param, 'metadata.\ufffd');
    assert.equal(body.error.human_message, 'unknown model "x\ufffd" 😀');
    assert.ok(!body.error.message.includes('\udc00'));
    assert.deepEqual(body.error.details, { model: 'x\ufffd', count: 2, error_code: 'validation_error' });
    // Valid UTF-8 both ways: what a strict parser (jq, Python's json with surrogates refused) accepts.
    const wire = Buffer.from(JSON.stringify(body), 'utf8').toString('utf8');
    assert.ok(!/\\ud[89ab]/i.test(wire));
  });

  it('leaves out the optional fields when there is nothing to say', () => {
    const body = renderErrorBody(new ApiError('not_found'));
    assert.equal(body.error.param, null);
    assert.equal('request_id' in body, false);
    assert.equal('request_id' in body.error, false);
    assert.equal('retry_after_seconds' in body.error, false);
    assert.deepEqual(body.error.details, { error_code: 'not_found' });
  });

  it('is read correctly by the OpenAI SDK', () => {
    const body = renderErrorBody(new ApiError('model_not_allowed', { param: 'model' }), 'req_2');
    const parsed = OpenAIAPIError.generate(403, body, undefined, new Headers());
    assert.equal(parsed.constructor.name, 'PermissionDeniedError');
    assert.equal(parsed.code, 'model_not_allowed');
    assert.equal(parsed.type, 'permission_error');
    assert.equal(parsed.param, 'model');
    assert.equal(parsed.message, `403 ${body.error.message}`);
  });

  it('is read correctly by the Anthropic SDK', () => {
    const body = renderErrorBody(new ApiError('budget_exceeded'), 'req_3');
    const parsed = AnthropicAPIError.generate(402, body, undefined, new Headers());
    assert.equal(parsed.type, 'billing_error');
    assert.equal(parsed.errorCode, 'budget_exceeded');
    assert.ok(parsed.message.includes(body.error.message));
  });
});

describe('errorResponseHeaders', () => {
  it('tells SDKs whether to retry and how long to wait', () => {
    assert.deepEqual(errorResponseHeaders(new ApiError('provider_timeout', { retryAfterSeconds: 1.2 })), {
      'x-should-retry': 'true',
      'retry-after': '2',
    });
    // A 409 that SDKs would otherwise retry on their own.
    assert.deepEqual(errorResponseHeaders(new ApiError('settlement_pending')), { 'x-should-retry': 'false' });
  });
});

describe('toApiError', () => {
  it('passes an ApiError through', () => {
    const error = new ApiError('conflict');
    assert.equal(toApiError(error), error);
  });

  it('turns anything else into internal_error without leaking its text', () => {
    const original = new Error('connect ECONNREFUSED 10.0.0.7:5432 password=hunter2');
    const error = toApiError(original);
    assert.equal(error.code, 'internal_error');
    assert.equal(error.status, 500);
    assert.equal(error.type, 'api_error');
    assert.equal(error.cause, original);
    assert.ok(!error.humanMessage.includes('ECONNREFUSED'));
    assert.ok(!error.message.includes('hunter2'));
    assert.ok(!JSON.stringify(renderErrorBody(error)).includes('hunter2'));
    assert.equal(toApiError('a thrown string').code, 'internal_error');
  });
});

describe('splitFormattedMessage', () => {
  it('splits at the first separator when the prefix is a catalogue code', () => {
    assert.deepEqual(splitFormattedMessage('rate_limit_exceeded - Slow down - please'), {
      code: 'rate_limit_exceeded',
      humanMessage: 'Slow down - please',
    });
    const error = new ApiError('weak_password');
    assert.deepEqual(splitFormattedMessage(error.message), { code: 'weak_password', humanMessage: error.humanMessage });
  });

  it('does not split when the prefix is not a catalogue code', () => {
    assert.equal(splitFormattedMessage('Sorry - something failed'), undefined);
    assert.equal(splitFormattedMessage('not_a_real_code - text'), undefined);
    assert.equal(splitFormattedMessage('rate_limit_exceeded-no spaces'), undefined);
    assert.equal(splitFormattedMessage('rate_limit_exceeded'), undefined);
    // The first ` - ` decides; a code later in the text does not count.
    assert.equal(splitFormattedMessage('Upstream said - rate_limit_exceeded - wait'), undefined);
  });
});

it('afterOutput: the same failure, not retryable, as a stream that already sent output reports it', () => {
  const timeout = new ApiError('provider_timeout', {
    humanMessage: 'no bytes for 30 s',
    details: { supplier: 'sim' },
    cause: new Error('x'),
  });
  assert.equal(timeout.retryable, true);
  const late = timeout.afterOutput();
  assert.equal(late.retryable, false);
  assert.ok(late instanceof ApiError);
  assert.deepEqual(
    [late.code, late.status, late.humanMessage, late.details, late.message],
    [timeout.code, timeout.status, timeout.humanMessage, timeout.details, timeout.message],
  );
  assert.equal(timeout.retryable, true); // the original is unchanged
  assert.equal(renderErrorBody(late).error.retryable, false);
  const refused = new ApiError('invalid_api_key');
  assert.equal(refused.afterOutput(), refused);
});
