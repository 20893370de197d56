// Finding 2 of issue 13: a 12 KB body nested ~6,000 levels in a passthrough field overflowed the
// stack — a 500, retried, counted against the supplier's shared health, so three such requests
// opened the EU circuit and sent every tenant's traffic to the US. Depth is refused at parse now.
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { maxJsonDepth } from '../../gateway/src/http/json-depth.js';
import { assertCatalogueError, send } from './support.js';

/** A chat body with a tool whose parameter schema holds arrays nested `levels` deep (built as text: JSON.stringify itself overflows). */
function chatWithDeepTool(levels: number, extra = ''): string {
  const deep = `${'['.repeat(levels)}${']'.repeat(levels)}`;
  return `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]${extra},"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"enum":${deep}}}}}}]}`;
}

describe('deeply nested JSON', () => {
  let h: GatewayHarness;
  let key: string;

  beforeAll(async () => {
    h = await startGatewayHarness(
      [
        { name: 'sim-eu', region: 'EU' },
        { name: 'sim-us', region: 'US' },
      ],
      { settings: { SVC_CIRCUIT_FAILURES: '3' } },
    );
    key = await h.createKey();
  });
  afterAll(async () => {
    await h?.close();
  });

  const chat = (extra: Record<string, unknown>) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...extra });

  test('is refused with a 400 before anything else, on every JSON route, and never opens a supplier circuit', async () => {
    const deep = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"region":"EU","x":${'['.repeat(6_000)}${']'.repeat(6_000)}}`;
    for (const path of ['/v1/chat/completions', '/v1/messages', '/v1/native/responses', '/v1/embeddings', '/v1/manage/keys']) {
      const reply = await send(h.gateway.url, path, { key: path.startsWith('/v1/manage') ? h.adminKey : key, body: deep });
      assertCatalogueError(reply, 400, 'invalid_json');
      assert.match(reply.text, new RegExp(`more than ${maxJsonDepth} levels`));
    }
    // The same depth in a field the schema passes through to the supplier, three times over the threshold.
    for (let i = 0; i < 4; i++) {
      const reply = await send(h.gateway.url, '/v1/chat/completions', { key, body: chatWithDeepTool(6_000, ',"region":"EU"') });
      assertCatalogueError(reply, 400, 'invalid_json');
    }
    // Another tenant's unrestricted request still goes to the primary (EU) supplier.
    const other = await h.createKey();
    const ok = await send(h.gateway.url, '/v1/chat/completions', { key: other, body: chat({}) });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.headers.get('x-svc-supplier'), 'sim-eu');
  });

  test('nesting up to the limit is served', async () => {
    // Each level of the tool adds to the depth: body > tools > [0] > function > parameters > properties > x > enum.
    const reply = await send(h.gateway.url, '/v1/chat/completions', { key, body: chatWithDeepTool(maxJsonDepth - 8) });
    assert.equal(reply.status, 200, reply.text.slice(0, 300));
  });
});
