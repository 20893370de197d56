// A stream's last frames (its final usage, totals and end; `[DONE]` on chat) leave only once the
// request's audit record is appended, as a JSON answer does — a gateway killed between a whole
// answer and its record lost both the record and the charge (outside probe: 23 of 260 complete
// streams had no audit row after a kill -9 under load). Here the audit append is held at the
// store: the client has the answer's content, and neither `[DONE]` nor the end until the append goes.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { openSharedTestStores } from '../../core/store/testing.js';
import type { Store } from '../../core/store/types.js';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { waitFor } from '../support/wait-for.js';

/** The store the gateway uses, whose audit appends wait while `held` is set. */
function gatedStore(inner: Store) {
  let release: (() => void) | undefined;
  let waiting = 0;
  const gate = {
    held: false,
    get waiting() {
      return waiting;
    },
    open() {
      gate.held = false;
      release?.();
    },
  };
  const store = new Proxy(inner, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (property !== 'streamAddMany' || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        if (gate.held) {
          waiting += 1;
          await new Promise<void>((resolve) => (release = resolve));
        }
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, gate };
}

describe('a stream ends after its audit record is appended', () => {
  let h: GatewayHarness;
  let gate: ReturnType<typeof gatedStore>['gate'];
  let inner: Store;
  beforeAll(async () => {
    inner = openSharedTestStores().main;
    const gated = gatedStore(inner);
    gate = gated.gate;
    // A store timeout far above the test's wait: the held append must not give up into the spill file.
    h = await startGatewayHarness(
      [
        { name: 'sim-a', region: 'EU' },
        { name: 'rs', protocol: 'openai-responses', region: 'EU', models: [{ id: 'resp-x' }] },
      ],
      { store: gated.store, settings: { SVC_STORE_TIMEOUT_MS: '30000' } },
    );
  });
  afterAll(async () => {
    gate?.open();
    await h?.close();
    await inner?.close();
  });

  // Per lane: its path and body, what shows content arrived, and the frame that closes its stream.
  const lanes = {
    chat: {
      path: 'chat/completions',
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hold the end' }], max_tokens: 20, stream: true },
      content: '"content"',
      closing: '[DONE]',
    },
    messages: {
      path: 'messages',
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hold the end' }], max_tokens: 20, stream: true },
      content: 'text_delta',
      closing: 'message_stop',
    },
    'native responses': {
      path: 'native/responses',
      body: { model: 'resp-x', input: [{ role: 'user', content: 'hold the end' }], stream: true },
      content: 'response.output_text.delta',
      closing: 'response.completed',
    },
  } as const;

  for (const [lane, { path, body, content, closing }] of Object.entries(lanes)) {
    test(`${lane}: content arrives, the last frames wait for the append`, async () => {
      const { id, secret } = await h.createKeyWithId();
      gate.held = true;
      const before = gate.waiting;
      const response = await fetch(`${h.gateway.url}/v1/${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(200);
      const reader = response.body!.getReader();
      let text = '';
      let ended = false;
      const reading = (async () => {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return void (ended = true);
          text += new TextDecoder().decode(value);
        }
      })();
      await waitFor('the audit append to be held', () => gate.waiting > before, 20_000);
      await waitFor('the answer content', () => text.includes(content), 20_000);
      // What closes the stream has not left: no [DONE] / message_stop / response.completed, no totals, no end.
      expect(text).not.toContain(closing);
      expect(text).not.toContain(': svc-totals');
      expect(ended).toBe(false);
      gate.open();
      await reading;
      expect(text).toContain(closing);
      expect(text).toContain(': svc-totals');
      await waitFor('the record in the audit log', async () => (await h.auditOf(id)).length === 1, 20_000);
    });
  }
});
