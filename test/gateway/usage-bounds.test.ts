// A supplier that over-reports its usage (found by an outside-style probe): 2,000 completion
// tokens for max_tokens 50 let concurrent requests spend 16× a key's budget, and 3,000,000,000
// prompt tokens overflowed the audit log's count so the record and its wallet debit were lost.
// Usage is charged within what the call can have used; the budget holds and every record lands.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { imageTokenAllowance } from '../../gateway/src/tokens/input-cap.js';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { waitFor } from '../support/wait-for.js';

let server: Server;
let h: GatewayHarness;
/** What the supplier claims, by the model it was asked for. */
const claims: Record<string, { prompt_tokens: number; completion_tokens: number }> = {
  'over-output': { prompt_tokens: 10, completion_tokens: 2_000 },
  'over-input': { prompt_tokens: 3_000_000_000, completion_tokens: 5 },
  'over-input-wide': { prompt_tokens: 3_000_000_000, completion_tokens: 5 },
};

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const { model, stream } = JSON.parse(body) as { model: string; stream?: boolean };
      const usage = { ...claims[model]!, total_tokens: 0 };
      const message = { role: 'assistant', content: 'a long answer, supposedly' };
      // A little latency, so concurrent requests are admitted before any settles.
      setTimeout(() => {
        if (stream) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          const chunk = (delta: object, extra: object = {}) =>
            `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta, finish_reason: null }], ...extra })}\n\n`;
          res.write(chunk({ role: 'assistant', content: message.content }));
          res.write(
            `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`,
          );
          res.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model, choices: [], usage })}\n\n`);
          return res.end('data: [DONE]\n\n');
        }
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            id: 'c1',
            object: 'chat.completion',
            created: 1,
            model,
            choices: [{ index: 0, message, finish_reason: 'stop' }],
            usage,
          }),
        );
      }, 100);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  h = await startGatewayHarness([
    {
      name: 'overcounting',
      region: 'EU',
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
      models: [
        { id: 'over-output', input_usd_per_mtok: 1, output_usd_per_mtok: 2 },
        { id: 'over-input', input_usd_per_mtok: 1, output_usd_per_mtok: 2, context_window: 1_000 },
        { id: 'over-input-wide', input_usd_per_mtok: 1, output_usd_per_mtok: 2, context_window: 100_000 },
      ],
    },
  ]);
});
afterAll(async () => {
  await h?.close();
  await new Promise((resolve) => server?.close(resolve));
});

const chat = (secret: string, model: string, stream: boolean, extra: Record<string, unknown> = {}) =>
  fetch(`${h.gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 50, stream, messages: [{ role: 'user', content: 'hello' }], ...extra }),
  });

interface AuditRow {
  status: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}
const auditOf = async (keyId: string) =>
  (
    (await (
      await fetch(`${h.gateway.url}/v1/manage/keys/${keyId}/audit?limit=500`, { headers: { authorization: `Bearer ${h.adminKey}` } })
    ).json()) as {
      data: AuditRow[];
    }
  ).data;

describe('a supplier over-reporting its usage', () => {
  test('2,000 completion tokens for max_tokens 50: charged at 50, and 60 concurrent requests stay within the budget', async () => {
    const { id, secret } = await h.createKeyWithId({ budgetLimitUsd: 0.001, budgetPeriod: 'daily' });
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => chat(secret, 'over-output', i % 2 === 0)));
    const served = answers.filter((a) => a.status === 200);
    expect(served.length).toBeGreaterThan(0);
    expect(answers.every((a) => a.status === 200 || a.status === 402)).toBe(true);
    for (const a of served) {
      if (a.headers.get('content-type')?.includes('json')) expect(a.headers.get('x-svc-output-tokens')).toBe('50');
      await a.arrayBuffer();
    }
    await waitFor('every served request audited', async () => (await auditOf(id)).filter((r) => r.status === 200).length === served.length);
    const rows = (await auditOf(id)).filter((r) => r.status === 200);
    expect(rows.every((r) => r.output_tokens === 50)).toBe(true);
    const spent = rows.reduce((sum, r) => sum + r.cost_usd, 0);
    expect(spent).toBeLessThanOrEqual(0.001);
    const key = (await (
      await fetch(`${h.gateway.url}/v1/manage/keys/${id}`, { headers: { authorization: `Bearer ${h.adminKey}` } })
    ).json()) as {
      budget_used: number;
    };
    expect(key.budget_used).toBeCloseTo(spent, 9);
  });

  test('n answers may each use the output cap: charged up to n × max_tokens, and reserved for it', async () => {
    // 16 answers of up to 50 tokens were charged 50 tokens in all (413 reported were charged 30).
    const { secret } = await h.createKeyWithId();
    const sixteen = await chat(secret, 'over-output', false, { n: 16 });
    expect(sixteen.status).toBe(200);
    expect(sixteen.headers.get('x-svc-output-tokens')).toBe('800');
    await sixteen.arrayBuffer();
    const wide = await chat(secret, 'over-output', false, { n: 16, max_tokens: 200 });
    expect(wide.headers.get('x-svc-output-tokens')).toBe('2000');
    await wide.arrayBuffer();
    // The reservation is for 16 × 50 output tokens ($0.0016): more than a $0.001 budget holds.
    const small = await h.createKeyWithId({ budgetLimitUsd: 0.001, budgetPeriod: 'daily' });
    const refused = await chat(small.secret, 'over-output', false, { n: 16 });
    expect(refused.status).toBe(402);
    await refused.arrayBuffer();
    const one = await chat(small.secret, 'over-output', false);
    expect(one.status).toBe(200);
    await one.arrayBuffer();
  });

  test('3,000,000,000 prompt tokens: charged at most what the request can amount to, and the audit record lands', async () => {
    const { id, secret } = await h.createKeyWithId();
    // Text only: a token covers at least one byte, so the request's bytes bound its input.
    const bodies = [false, true].map((stream) => ({
      model: 'over-input-wide',
      max_tokens: 50,
      stream,
      messages: [{ role: 'user', content: 'hello' }],
    }));
    // An image may cost more tokens than its bytes (a URL): an allowance each.
    const image = { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } };
    bodies.push({ ...bodies[0]!, messages: [{ role: 'user', content: [{ type: 'text', text: 'what is it?' }, image, image] }] } as never);
    for (const body of bodies) {
      const answer = await fetch(`${h.gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(answer.status).toBe(200);
      await answer.arrayBuffer();
    }
    // A file (a PDF) has no bound the request shows: the context window bounds it.
    const file = await chat(secret, 'over-input-wide', false, {
      messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-1' } }] }],
    });
    expect(file.status).toBe(200);
    await file.arrayBuffer();
    await waitFor('every request audited', async () => (await auditOf(id)).length === 4);
    const inputs = (await auditOf(id)).map((row) => row.input_tokens).sort((a, b) => a - b);
    const bytes = bodies.map((body) => Buffer.byteLength(JSON.stringify(body)));
    expect(inputs).toEqual([bytes[0]!, bytes[1]!, bytes[2]! + 2 * imageTokenAllowance, 100_000].sort((a, b) => a - b));
    // Within a context window smaller than the request, the window.
    const narrow = await chat(secret, 'over-input', false, { messages: [{ role: 'user', content: 'x'.repeat(5_000) }] });
    expect(narrow.headers.get('x-svc-input-tokens')).toBe('1000');
    await narrow.arrayBuffer();
  });

  test('3,000,000,000 prompt tokens on 60 concurrent requests: the budget holds (the charge stays within what was reserved)', async () => {
    // Charged at the 100,000-token window, each call cost $0.1 against the ~$0.0002 it had reserved: 84× a budget was spent.
    const { id, secret } = await h.createKeyWithId({ budgetLimitUsd: 0.005, budgetPeriod: 'daily' });
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => chat(secret, 'over-input-wide', i % 2 === 0)));
    expect(answers.every((a) => a.status === 200 || a.status === 402)).toBe(true);
    const served = answers.filter((a) => a.status === 200).length;
    await Promise.all(answers.map((a) => a.arrayBuffer()));
    expect(served).toBeGreaterThan(0);
    await waitFor('every served request audited', async () => (await auditOf(id)).filter((r) => r.status === 200).length === served);
    const spent = (await auditOf(id)).reduce((sum, r) => sum + r.cost_usd, 0);
    expect(spent).toBeLessThanOrEqual(0.005);
  });

  test("a stream's own usage event carries the totals as charged, the same as its closing comment", async () => {
    const secret = await h.createKey();
    const answer = await fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'over-output',
        max_tokens: 50,
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'hello' }],
      }),
    });
    const text = await answer.text();
    const usageChunk = text
      .split('\n\n')
      .map((frame) => frame.replace(/^data: /, ''))
      .filter((data) => data.startsWith('{'))
      .map((data) => JSON.parse(data) as { choices: unknown[]; usage?: { completion_tokens: number }; svc?: unknown })
      .find((chunk) => chunk.usage);
    // The supplier's own numbers stay in `usage`; `svc` is what is charged.
    expect(usageChunk?.usage?.completion_tokens).toBe(2_000);
    const closing = JSON.parse(/: svc-totals (.*)/.exec(text)![1]!) as unknown;
    expect(usageChunk?.svc).toEqual(closing);
    expect(closing).toMatchObject({ output_tokens: 50 });
  });
});
