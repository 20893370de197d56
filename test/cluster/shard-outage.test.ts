// One shard of a Redis Cluster goes down under a running gateway: keys whose state lives on the
// other shards are served as before; a key whose state lives on the dead shard is refused with a
// retryable 503 naming the store — never a 500, never a hang — and is served again once the
// shard is back (docs/architecture.md, "Store sharding"). A private cluster, since a node is shut down; on the real-services run only (the
// embedded run has no Redis at all).
import { afterAll, beforeAll, describe, inject, test } from 'vitest';
import assert from 'node:assert/strict';
import { rateWindowKey } from '../../core/budget/index.js';
import { keySlot } from '../../core/store/index.js';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { expectError, type Reply } from '../support/http-assertions.js';
import { waitFor } from '../support/wait-for.js';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.js';
import { captureLogs, type CapturedLogs } from '../observability/log-capture.js';

const realServices = inject('redisClusterUrl') !== '';

describe.runIf(realServices)('a Redis Cluster shard going down under the gateway', () => {
  let cluster: RedisCluster;
  let h: GatewayHarness;
  let logs: CapturedLogs;
  const saved = { url: process.env.REDIS_URL, cluster: process.env.SVC_REDIS_CLUSTER };

  beforeAll(async () => {
    cluster = await startRedisCluster();
    process.env.REDIS_URL = cluster.url;
    process.env.SVC_REDIS_CLUSTER = 'true';
    logs = captureLogs();
    h = await startGatewayHarness(undefined, { logger: logs.logger });
  });
  afterAll(async () => {
    await h?.close();
    await cluster?.stop();
    for (const [name, value] of [
      ['REDIS_URL', saved.url],
      ['SVC_REDIS_CLUSTER', saved.cluster],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  const failuresLogged = () =>
    logs
      .lines()
      .filter((l) => l.msg === 'request failed')
      .map((l) => JSON.stringify(l.err))
      .join('\n');

  const chat = (secret: string) =>
    fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
    });

  test('keys on the live shards are served; a key on the dead shard gets 503 service_unavailable until it is back', async () => {
    const dead = cluster.nodes[0]!;
    const onDead = (id: string) => {
      const slot = keySlot(rateWindowKey(id));
      return slot >= dead.firstSlot && slot <= dead.lastSlot;
    };
    // Budgeted keys: every request reserves on its key's shard. Made until both kinds exist.
    const keys: { id: string; secret: string }[] = [];
    while (!keys.some((k) => onDead(k.id)) || !keys.some((k) => !onDead(k.id))) {
      keys.push(await h.createKeyWithId({ budgetLimitUsd: 10, rateLimitRpm: 1000 }));
    }
    for (const key of keys) assert.equal((await chat(key.secret)).status, 200, 'all served while the cluster is whole');

    await cluster.shutDownNodes([0]);

    for (const key of keys) {
      const res = await chat(key.secret);
      if (onDead(key.id)) {
        const body = (await res.json()) as Reply['body'];
        // A failure names the gateway's own logged error (the cause of a 500 is only in the log).
        if (res.status !== 503) assert.fail(`${res.status} for a key on the dead shard; gateway log:\n${failuresLogged()}`);
        expectError({ status: res.status, headers: res.headers, body }, 503, 'service_unavailable');
        assert.match(body.error!.human_message, /Redis/);
        assert.equal(res.headers.get('retry-after'), '2');
      } else {
        assert.equal(res.status, 200, `key ${key.id} lives on a live shard: ${await res.text()}`);
      }
    }

    // Back empty (no persistence): its budget counters are rebuilt from PostgreSQL, so it serves again.
    await cluster.restartNodes([0]);
    await waitFor('the restarted shard to serve its keys again', async () => {
      for (const key of keys) if ((await chat(key.secret)).status !== 200) return false;
      return true;
    });
  });

  test('every node down: budgeted keys get 503 at once (no request waits for the cluster), keys without limits are served; all back: served again', async () => {
    const budgeted = await h.createKeyWithId({ budgetLimitUsd: 10 });
    const plain = await h.createKeyWithId();
    assert.equal((await chat(budgeted.secret)).status, 200);
    assert.equal((await chat(plain.secret)).status, 200);
    await cluster.shutDownNodes([0, 1, 2]);
    for (let i = 0; i < 3; i++) {
      const res = await chat(budgeted.secret);
      expectError({ status: res.status, headers: res.headers, body: (await res.json()) as Reply['body'] }, 503, 'service_unavailable');
      // Known key, no limits, no payer: served without the store (its record from PostgreSQL, its audit record spilled).
      assert.equal((await chat(plain.secret)).status, 200);
    }
    await cluster.restartNodes([0, 1, 2]);
    await waitFor('the cluster to serve budgeted keys again', async () => (await chat(budgeted.secret)).status === 200);
  });
});
