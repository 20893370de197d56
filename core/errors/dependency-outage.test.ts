import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { toApiError } from './api-error.js';
import { outageSource } from './dependency-outage.js';

function withFields(message: string, fields: Record<string, unknown>): Error {
  return Object.assign(new Error(message), fields);
}

describe('dependency outages (issue 13 finding 7)', () => {
  it('a Redis command that gave up is 503 service_unavailable, retryable, naming the store', () => {
    const error = toApiError(withFields('Reached the max retries per request limit (which is 2).', { name: 'MaxRetriesPerRequestError' }));
    assert.equal(error.code, 'service_unavailable');
    assert.equal(error.status, 503);
    assert.equal(error.retryable, true);
    assert.match(error.humanMessage, /Redis/);
    assert.equal(toApiError(new Error('Connection is closed.')).code, 'service_unavailable');
    // Pipelined commands cut off by the connection closing (a Redis node shut down mid-pipeline).
    assert.equal(toApiError(withFields('Command aborted due to connection close', { name: 'AbortError' })).code, 'service_unavailable');
    assert.equal(toApiError(withFields('Command aborted due to connection close', { name: 'Error' })).code, 'internal_error');
  });

  it('a Redis Cluster whose shard is down, moving or unreachable is 503 naming the store', () => {
    for (const failure of [
      withFields('CLUSTERDOWN The cluster is down', { name: 'ReplyError' }),
      withFields('CLUSTERDOWN Hash slot not served', { name: 'ReplyError' }),
      withFields('TRYAGAIN Multiple keys request during rehashing of slot', { name: 'ReplyError' }),
      withFields('LOADING Redis is loading the dataset in memory', { name: 'ReplyError' }),
      new Error('Too many Cluster redirections. Last error: Error: Connection is closed.'),
      withFields('Failed to refresh slots cache.', { name: 'ClusterAllFailedError' }),
      new Error("Cluster isn't ready and enableOfflineQueue options is false"),
    ]) {
      const error = toApiError(failure);
      assert.equal(error.status, 503, failure.message);
      assert.match(error.humanMessage, /Redis/);
    }
    assert.equal(toApiError(withFields('CLUSTERDOWNISH not a reply', { name: 'ReplyError' })).code, 'internal_error');
  });

  it('PostgreSQL connection failures are 503 naming the database, also when wrapped', () => {
    for (const cause of [
      withFields('terminating connection due to administrator command', { code: '57P01' }),
      withFields('connection failure', { code: '08006' }),
      withFields('Knex: Timeout acquiring a connection. The pool is probably full.', { name: 'KnexTimeoutError' }),
      new Error('Connection terminated unexpectedly'),
      // A database closed to connections (ALTER DATABASE … ALLOW_CONNECTIONS false), and a lost reply (query_timeout).
      withFields('database "gw" is not currently accepting connections', { code: '55000' }),
      new Error('select * from "api_keys" where "id" = $1 - Query read timeout'),
    ]) {
      const error = toApiError(new Error('query failed', { cause }));
      assert.equal(error.status, 503, cause.message);
      assert.match(error.humanMessage, /PostgreSQL/);
    }
    assert.equal(outageSource(withFields('connect ECONNREFUSED 127.0.0.1:5432', { code: 'ECONNREFUSED' })), 'network');
  });

  it('anything else stays internal_error, and data errors are not outages', () => {
    assert.equal(toApiError(new Error('boom')).code, 'internal_error');
    assert.equal(toApiError(withFields('duplicate key', { code: '23505' })).code, 'internal_error');
    // 55000 is also "object not in prerequisite state" for other reasons (a sequence's currval): not an outage.
    assert.equal(
      toApiError(withFields('currval of sequence "s" is not yet defined in this session', { code: '55000' })).code,
      'internal_error',
    );
    assert.equal(toApiError(withFields('ERR wrong number of arguments', { name: 'ReplyError' })).code, 'internal_error');
  });
});
