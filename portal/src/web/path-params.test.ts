import type { AddressInfo } from 'node:net';
import express, { Router } from 'express';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorHandler } from './errors.js';
import { applyPathParamRules } from './path-params.js';

let server: ReturnType<ReturnType<typeof express>['listen']>;
let base: string;
beforeAll(async () => {
  const app = express();
  const router = Router();
  applyPathParamRules(router);
  router.get('/dashboard/keys/:key_id', (req, res) => void res.json({ key: req.params.key_id }));
  router.get('/jobs/:job_id', (req, res) => void res.json({ job: req.params.job_id }));
  router.get('/dashboard/request-log/:request_id', (req, res) => void res.json({ request: req.params.request_id }));
  // A database refusing a value the routes let through (SQLSTATE class 22), as PostgreSQL reports it.
  router.get('/refused', () => {
    throw Object.assign(
      new Error('insert into "billing_payments" ("amount_cents") values ($1) - value "2147483648" is out of range for type integer'),
      {
        code: '22003',
      },
    );
  });
  router.get('/streamed', (_req, res, next) => {
    res.write('a,b\r\n');
    next(new Error('the export broke off'));
  });
  app.use(router);
  app.use(errorHandler(pino({ level: 'silent' })));
  await new Promise<void>((resolve) => {
    server = app.listen(0, '127.0.0.1', () => resolve());
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe('applyPathParamRules', () => {
  it('answers a non-integer *_id with 422 naming it, before the handler', async () => {
    const response = await fetch(`${base}/dashboard/keys/abc`, { headers: { accept: 'application/json' } });
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({
      code: 'validation_error',
      human_message: 'Some input is not valid: key_id',
      detail: [{ loc: ['path', 'key_id'], msg: 'must be a positive integer', type: 'int_parsing' }],
    });
    expect((await fetch(`${base}/dashboard/keys/0`, { headers: { accept: 'application/json' } })).status).toBe(422);
    expect(await (await fetch(`${base}/dashboard/keys/42`)).json()).toEqual({ key: '42' });
  });

  it("answers an id past the database's integer range with 422; the request log's bigint ids go further", async () => {
    const beyond = await fetch(`${base}/dashboard/keys/2147483648`, { headers: { accept: 'application/json' } });
    expect(beyond.status).toBe(422);
    expect(((await beyond.json()) as { detail: { msg: string }[] }).detail[0]!.msg).toBe('must be a positive integer up to 2147483647');
    expect(await (await fetch(`${base}/dashboard/keys/2147483647`)).json()).toEqual({ key: '2147483647' });
    expect(await (await fetch(`${base}/dashboard/request-log/2147483648`)).json()).toEqual({ request: '2147483648' });
    expect((await fetch(`${base}/dashboard/request-log/99999999999999999`)).status).toBe(422);
  });

  it('a value the database refuses is 422, a malformed percent-encoding too, and a stream that fails part-way is cut off', async () => {
    const refused = await fetch(`${base}/refused`, { headers: { accept: 'application/json' } });
    expect(refused.status).toBe(422);
    // Said in the caller's terms: the driver's message quotes the statement, which is not theirs to read.
    const said = JSON.stringify(await refused.json());
    expect(said).toContain('a number is out of range');
    expect(said).not.toContain('insert into');
    expect((await fetch(`${base}/dashboard/keys/%ff`, { headers: { accept: 'application/json' } })).status).toBe(422);
    // The response ends (the body is cut off) instead of never finishing.
    await expect((await fetch(`${base}/streamed`)).text()).rejects.toThrow();
  });

  it('leaves the string ids of the seed alone', async () => {
    expect(await (await fetch(`${base}/jobs/exp-7f`)).json()).toEqual({ job: 'exp-7f' });
  });
});
