// Finding 6 of issue 13: admin input reached PostgreSQL unchecked — a NUL character in a key name,
// credit reason or metadata, a lone surrogate, an audit date of -271821-04-20T00:00:00Z, a
// malformed cursor or name_prefix=%00 were 500s. Each is a 400 naming the field now.
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { assertCatalogueError, send } from './support.js';

const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('Management API input PostgreSQL cannot store', () => {
  let h: GatewayHarness;
  let keyId: string;
  const admin = (path: string, init: { method?: string; body?: string | object | Buffer } = {}) =>
    send(h.gateway.url, path, { key: h.adminKey, ...init });

  beforeAll(async () => {
    h = await startGatewayHarness();
    const created = await admin('/v1/manage/keys', { body: { name: 'valid' } });
    assert.equal(created.status, 201, created.text);
    keyId = (JSON.parse(created.text) as { id: string }).id;
  });
  afterAll(async () => {
    await h?.close();
  });

  // Written as JSON text: "\ud800" is a lone surrogate, which JSON.stringify would escape the same way.
  const bodies: { name: string; path: string; method: string; body: string; param: string }[] = [
    { name: 'NUL in a key name', path: '/v1/manage/keys', method: 'POST', body: '{"name":"a\\u0000b"}', param: 'name' },
    { name: 'a lone surrogate in a key name', path: '/v1/manage/keys', method: 'POST', body: '{"name":"a\\ud800b"}', param: 'name' },
    // A right-to-left override makes "key\u202Enimda" read "keyadmin" wherever the name is shown.
    {
      name: 'a direction override in a key name',
      path: '/v1/manage/keys',
      method: 'POST',
      body: '{"name":"key\\u202enimda"}',
      param: 'name',
    },
    {
      name: 'NUL in a metadata value',
      path: '/v1/manage/keys',
      method: 'POST',
      body: '{"name":"n","metadata":{"team":"a\\u0000"}}',
      param: 'metadata.team',
    },
    {
      name: 'NUL in a metadata key',
      path: '/v1/manage/keys',
      method: 'POST',
      body: '{"name":"n","metadata":{"te\\u0000am":"a"}}',
      param: 'metadata.te\u0000am',
    },
    {
      name: 'a lone surrogate in a metadata value',
      path: '/v1/manage/keys',
      method: 'POST',
      body: '{"name":"n","metadata":{"team":"\\udc00"}}',
      param: 'metadata.team',
    },
    {
      name: 'NUL in a model name',
      path: '/v1/manage/keys',
      method: 'POST',
      body: '{"name":"n","allowed_models":["gpt\\u0000"]}',
      param: 'allowed_models[0]',
    },
    {
      name: 'NUL in a credit reason',
      path: '/v1/manage/wallets/project:p1/credits',
      method: 'POST',
      body: '{"amount_usd":1,"reason":"top\\u0000up"}',
      param: 'reason',
    },
    {
      name: 'a lone surrogate in a credit reason',
      path: '/v1/manage/wallets/project:p1/credits',
      method: 'POST',
      body: '{"amount_usd":1,"reason":"\\ud83d"}',
      param: 'reason',
    },
  ];
  for (const c of bodies) {
    test(`${c.name} is a 400 naming the field`, async () => {
      const reply = await admin(c.path, { method: c.method, body: c.body });
      assertCatalogueError(reply, 400, 'validation_error');
      assert.equal((JSON.parse(reply.text) as { error: { param: string } }).error.param, c.param);
    });
  }

  test('a PATCH with NUL in the name is a 400, and the key is unchanged', async () => {
    assertCatalogueError(
      await admin(`/v1/manage/keys/${keyId}`, { method: 'PATCH', body: '{"name":"x\\u0000"}' }),
      400,
      'validation_error',
    );
    const key = await admin(`/v1/manage/keys/${keyId}`);
    assert.equal((JSON.parse(key.text) as { name: string }).name, 'valid');
  });

  test('bytes that are not UTF-8 in a key name are 400 invalid_json, and no key is created with U+FFFD in its name', async () => {
    const body = Buffer.concat([Buffer.from('{"name":"k'), Buffer.from([0xff, 0xc3]), Buffer.from('"}')]);
    assertCatalogueError(await admin('/v1/manage/keys', { body }), 400, 'invalid_json');
    const listed = await admin('/v1/manage/keys?name_prefix=k');
    assert.ok(!listed.text.includes('\ufffd'), listed.text);
  });

  test('a PATCH with no field is a 400 about the body, naming no field', async () => {
    const reply = await admin(`/v1/manage/keys/${keyId}`, { method: 'PATCH', body: {} });
    assertCatalogueError(reply, 400, 'validation_error');
    const error = (JSON.parse(reply.text) as { error: { param: string | null; human_message: string } }).error;
    assert.equal(error.param, null);
    assert.match(error.human_message, /at least one field/);
  });

  test('a metadata key "__proto__" is a 400 naming it, not silently dropped', async () => {
    const reply = await admin('/v1/manage/keys', { body: '{"name":"p","metadata":{"__proto__":"v"}}' });
    assertCatalogueError(reply, 400, 'validation_error');
    assert.equal((JSON.parse(reply.text) as { error: { param: string } }).error.param, 'metadata.__proto__');
  });

  const queries: { name: string; path: () => string; param: string }[] = [
    { name: 'name_prefix=%00', path: () => '/v1/manage/keys?name_prefix=%00', param: 'name_prefix' },
    {
      name: 'a list cursor holding NUL',
      path: () => `/v1/manage/keys?cursor=${cursorOf(['2026-01-01T00:00:00.000Z', 'key_\u0000'])}`,
      param: 'cursor',
    },
    {
      name: 'a list cursor with a date PostgreSQL cannot read',
      path: () => `/v1/manage/keys?cursor=${cursorOf(['-271821-04-20T00:00:00Z', 'key_a'])}`,
      param: 'cursor',
    },
    { name: 'a list cursor that is not base64url JSON', path: () => '/v1/manage/keys?cursor=%%%', param: 'cursor' },
    // JavaScript's Date.parse reads these; PostgreSQL refused them ("invalid input syntax for type timestamp") with a 500.
    ...[
      ['1', 'key_a'],
      ['2026-02-30', 'key_a'],
      ['2026-01-01', 'key_a'],
    ].flatMap((position) =>
      ['keys', 'tokens'].map((list) => ({
        name: `a ${list} cursor with the date ${position[0]}, not the form the API writes`,
        path: () => `/v1/manage/${list}?cursor=${cursorOf(position)}`,
        param: 'cursor',
      })),
    ),
    {
      name: 'an audit date at the edge of JavaScript dates',
      path: () => `/v1/manage/keys/${keyId}/audit?from=-271821-04-20T00:00:00Z`,
      param: 'from',
    },
    {
      name: 'an audit date naming a day February does not have',
      path: () => `/v1/manage/keys/${keyId}/audit?from=2026-02-30`,
      param: 'from',
    },
    // Date.parse reads these (from=1 was 2001-01-01); the parameter is documented as ISO 8601.
    ...['1', '2026', 'March 7, 2026', '2026/03/07', '1 Jan 2026 00:00 GMT'].map((from) => ({
      name: `an audit date that is not ISO 8601 (${from})`,
      path: () => `/v1/manage/keys/${keyId}/audit?from=${encodeURIComponent(from)}`,
      param: 'from',
    })),
    { name: 'an audit date past year 9999', path: () => `/v1/manage/keys/${keyId}/audit?to=+275760-09-13T00:00:00Z`, param: 'to' },
    {
      name: 'an audit cursor holding NUL',
      path: () => `/v1/manage/keys/${keyId}/audit?cursor=${cursorOf(['2026-01-01T00:00:00.000Z', 'req_\u0000'])}`,
      param: 'cursor',
    },
  ];
  for (const q of queries) {
    test(`${q.name} is a 400 naming the parameter`, async () => {
      const reply = await admin(q.path());
      assertCatalogueError(reply, 400, 'validation_error');
      assert.equal((JSON.parse(reply.text) as { error: { param: string } }).error.param, q.param);
    });
  }

  test('ordinary text, emoji included, is stored and read back', async () => {
    // Right-to-left text itself needs no direction control, and is kept as written.
    const hebrew = await admin('/v1/manage/keys', { body: { name: 'מפתח ראשי' } });
    assert.equal(hebrew.status, 201, hebrew.text);
    const created = await admin('/v1/manage/keys', { body: { name: 'équipe 🚀', metadata: { team: 'données' } } });
    assert.equal(created.status, 201, created.text);
    const listed = await admin(`/v1/manage/keys?name_prefix=${encodeURIComponent('équipe')}`);
    assert.equal(listed.status, 200, listed.text);
    assert.equal((JSON.parse(listed.text) as { data: { name: string }[] }).data[0]?.name, 'équipe 🚀');
    const audit = await admin(`/v1/manage/keys/${keyId}/audit?from=2026-01-01T00:00:00Z&to=9999-12-31T00:00:00Z`);
    for (const iso of ['2026-01-01', '2026-01-01T08:00', '2026-01-01T08:00:00.000+02:00'])
      assert.equal((await admin(`/v1/manage/keys/${keyId}/audit?from=${encodeURIComponent(iso)}`)).status, 200, iso);
    assert.equal(audit.status, 200, audit.text);
  });
});
