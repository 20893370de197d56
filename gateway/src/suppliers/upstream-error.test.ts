import { describe, expect, it } from 'vitest';
import { mapAnthropicError } from './anthropic/errors.js';
import { mapOpenAiError } from './openai/errors.js';
import { credentialMask, providerCode, withoutCredential } from './upstream-error.js';

const json = (body: unknown) => JSON.stringify(body);
const mappers = { openai: mapOpenAiError, anthropic: mapAnthropicError };

describe('supplier error mapping, every protocol alike', () => {
  describe.each(Object.entries(mappers))('%s protocol', (_protocol, map) => {
    it('keeps a numeric JSON-RPC code and the supplier status', () => {
      const error = map(500, {}, json({ error: { code: -32603, message: 'Internal JSON-RPC error' } }), 'sim-eu');
      expect(error.code).toBe('-32603');
      expect(error.status).toBe(500);
      expect(error.humanMessage).toBe('Internal JSON-RPC error');
      expect(error.message).toBe('-32603 - Internal JSON-RPC error');
      expect(error.retryable).toBe(true);
    });

    it('keeps a numeric code that came without a message, with a message naming the supplier', () => {
      const error = map(400, {}, json({ error: { code: 1301 } }), 'sim-eu');
      expect(error.code).toBe('1301');
      expect(error.status).toBe(400);
      expect(error.humanMessage).toContain('sim-eu');
    });

    it('answers 529 as 503 and keeps the code', () => {
      const body = json({ type: 'error', error: { type: 'overloaded_error', code: 'overloaded_error', message: 'Overloaded' } });
      const error = map(529, { 'retry-after': '7' }, body, 'sim-eu');
      expect(error.code).toBe('overloaded_error');
      expect(error.status).toBe(503);
      expect(error.retryAfterSeconds).toBe(7);
    });

    it('answers a 529 with no readable body as 503 provider_unavailable', () => {
      const error = map(529, {}, 'overloaded', 'sim-eu');
      expect(error.status).toBe(503);
      expect(error.code).toBe('provider_unavailable');
    });
  });

  it('a non-integer or empty code is no code', () => {
    expect(providerCode(1.5)).toBeUndefined();
    expect(providerCode('')).toBeUndefined();
    expect(providerCode(null)).toBeUndefined();
    expect(providerCode(0)).toBe('0');
  });
});

describe('withoutCredential: a supplier error text without the credential the gateway sent', () => {
  const key = 'sk-proj/Abc123+xyz';
  it('masks the credential as written, and as JSON escapes spell it (parsing would turn them back into it)', () => {
    expect(withoutCredential(`{"error":{"message":"bad key ${key}"}}`, key)).toBe(`{"error":{"message":"bad key ${credentialMask}"}}`);
    const escaped = JSON.stringify({ error: { message: `bad key ${key}` } })
      .replace('/', '\\/')
      .replace('A', '\\u0041');
    expect(escaped).not.toContain(key);
    const masked = withoutCredential(escaped, key);
    expect((JSON.parse(masked) as { error: { message: string } }).error.message).toBe(`bad key ${credentialMask}`);
    // The error mappers read the masked text: the client's message holds no credential.
    expect(mapOpenAiError(400, {}, masked, 'sup').humanMessage).not.toContain(key);
  });

  it('leaves other text alone, and a credential too short to tell from ordinary words', () => {
    const text = '{"error":{"message":"quota \\/ plan exceeded"}}';
    expect(withoutCredential(text, key)).toBe(text);
    expect(withoutCredential('the key is short', 'short')).toBe('the key is short');
    expect(withoutCredential('no credential sent', undefined)).toBe('no credential sent');
  });
});
