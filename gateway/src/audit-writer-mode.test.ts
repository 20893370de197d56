import assert from 'node:assert/strict';
import { test } from 'vitest';
import { parseSettings } from '../../core/config/index.js';
import type { Database } from '../../core/db/index.js';
import { auditWriterMode } from './server.js';

const settingsWith = (extra: Record<string, string>) =>
  parseSettings({ SVC_ADMIN_KEY: `svc-admin-${'a'.repeat(40)}`, SVC_KEY_PEPPER: 'p'.repeat(40), SVC_CATALOG: 'x', ...extra });
const shared = { REDIS_URL: 'redis://127.0.0.1:6379', DATABASE_URL: 'postgres://x@127.0.0.1/db' };

test('SVC_AUDIT_WRITER: auto is a thread only where the store and database are shared; thread without them is refused', () => {
  assert.equal(auditWriterMode(settingsWith(shared)), 'thread');
  assert.equal(auditWriterMode(settingsWith({})), 'inline', 'embedded defaults');
  assert.equal(auditWriterMode(settingsWith(shared), { database: {} as Database }), 'inline', 'a database handed in by the caller');
  assert.equal(auditWriterMode(settingsWith({ ...shared, SVC_AUDIT_WRITER: 'off' })), 'off');
  assert.equal(auditWriterMode(settingsWith({ SVC_AUDIT_WRITER: 'inline' })), 'inline');
  assert.throws(
    () => auditWriterMode(settingsWith({ SVC_AUDIT_WRITER: 'thread' })),
    /SVC_AUDIT_WRITER=thread needs REDIS_URL and DATABASE_URL/,
  );
  assert.throws(() => settingsWith({ SVC_AUDIT_WRITER: 'sometimes' }), /SVC_AUDIT_WRITER/);
});
