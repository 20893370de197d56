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

  it('leaves the string ids of the seed alone', async () => {
    expect(await (await fetch(`${base}/jobs/exp-7f`)).json()).toEqual({ job: 'exp-7f' });
  });
});
