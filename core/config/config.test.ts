import { test } from 'vitest';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCatalogue, ConfigError, loadConfig, parseSettings } from './index.js';

const secret = 'x'.repeat(40);
const baseEnv = { SVC_ADMIN_KEY: secret, SVC_KEY_PEPPER: secret, SVC_CATALOG: 'catalog.yaml' };

const supplier = {
  name: 'sim-eu',
  protocol: 'openai',
  base_url: 'http://127.0.0.1:8090/v1/',
  region: 'EU',
  models: [{ id: 'gpt-4o-mini', input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 }],
};

test('settings: defaults apply and numbers are coerced', () => {
  const s = parseSettings({ ...baseEnv, PORT: '9000' });
  assert.equal(s.PORT, 9000);
  assert.equal(s.PORTAL_PORT, 3000);
  assert.equal(s.SVC_DATA_DIR, './.data');
  assert.equal(s.DATABASE_URL, undefined);
});

test('settings: empty DATABASE_URL means embedded, a wrong scheme is refused by name', () => {
  assert.equal(parseSettings({ ...baseEnv, DATABASE_URL: '' }).DATABASE_URL, undefined);
  assert.throws(() => parseSettings({ ...baseEnv, DATABASE_URL: 'mysql://x/y' }), /DATABASE_URL/);
  assert.throws(() => parseSettings({ ...baseEnv, REDIS_URL: 'not a url' }), /REDIS_URL/);
});

test('settings: Redis Cluster takes one or several seed URLs; several without SVC_REDIS_CLUSTER are refused', () => {
  assert.equal(parseSettings({ ...baseEnv, REDIS_URL: 'redis://a:7000' }).SVC_REDIS_CLUSTER, false);
  const cluster = parseSettings({ ...baseEnv, REDIS_URL: 'redis://a:7000, redis://b:7001', SVC_REDIS_CLUSTER: 'true' });
  assert.equal(cluster.SVC_REDIS_CLUSTER, true);
  assert.equal(cluster.REDIS_URL, 'redis://a:7000, redis://b:7001');
  assert.throws(
    () => parseSettings({ ...baseEnv, REDIS_URL: 'redis://a:7000,redis://b:7001' }),
    /REDIS_URL: several URLs .*SVC_REDIS_CLUSTER=true/,
  );
  assert.throws(() => parseSettings({ ...baseEnv, REDIS_URL: 'redis://a:7000,http://b', SVC_REDIS_CLUSTER: 'true' }), /REDIS_URL/);
  assert.throws(() => parseSettings({ ...baseEnv, SVC_REDIS_CLUSTER: 'true' }), /SVC_REDIS_CLUSTER: needs REDIS_URL/);
  // One server whose password holds a comma is still one URL.
  assert.equal(parseSettings({ ...baseEnv, REDIS_URL: 'redis://:pa,ss@cache:6379' }).REDIS_URL, 'redis://:pa,ss@cache:6379');
});

test('settings: a short admin key or missing pepper stops start-up naming the field', () => {
  assert.throws(
    () => parseSettings({ ...baseEnv, SVC_ADMIN_KEY: 'short' }),
    (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.match(e.message, /SVC_ADMIN_KEY: must be at least 32 characters/);
      return true;
    },
  );
  assert.throws(() => parseSettings({ ...baseEnv, SVC_KEY_PEPPER: undefined }), /SVC_KEY_PEPPER/);
  assert.throws(() => parseSettings({ ...baseEnv, PORT: '70000' }), /PORT/);
});

test('catalogue: builds routes ordered by priority with defaults filled in', () => {
  const cat = buildCatalogue(
    {
      suppliers: [
        { ...supplier, name: 'b', priority: 5 },
        { ...supplier, name: 'a', priority: 1, models: [{ ...supplier.models[0], upstream: 'up-id', owned_by: 'ext' }] },
      ],
    },
    {},
  );
  const routes = cat.routes.get('gpt-4o-mini')!;
  assert.deepEqual(
    routes.map((r) => r.supplier.name),
    ['a', 'b'],
  );
  assert.equal(routes[0]!.model.upstream, 'up-id');
  assert.equal(routes[1]!.model.upstream, 'gpt-4o-mini');
  assert.equal(routes[0]!.supplier.baseUrl, 'http://127.0.0.1:8090/v1');
  assert.equal(routes[0]!.supplier.timeoutMs, 300_000);
  assert.equal(routes[0]!.supplier.firstByteTimeoutMs, 30_000);
  assert.equal(routes[0]!.supplier.connectTimeoutMs, 5_000);
  assert.deepEqual(cat.models, [{ id: 'gpt-4o-mini', ownedBy: 'ext' }]);
});

test('catalogue: each kind of mistake names its field', () => {
  const cases: [unknown, RegExp][] = [
    [{ suppliers: [{ ...supplier, protocol: 'grpc' }] }, /suppliers\[0\]\.protocol/],
    [{ suppliers: [{ ...supplier, region: 'eu' }] }, /suppliers\[0\]\.region: must be an upper-case region code/],
    [
      { suppliers: [{ ...supplier, models: [{ id: 'm', input_usd_per_mtok: -1, output_usd_per_mtok: 1 }] }] },
      /suppliers\[0\]\.models\[0\]\.input_usd_per_mtok/,
    ],
    [{ suppliers: [supplier, supplier] }, /suppliers\[1\]\.name: duplicate supplier name/],
    [
      { suppliers: [{ ...supplier, api_key_env: 'MISSING_KEY_VAR' }] },
      /suppliers\[0\]\.api_key_env: environment variable MISSING_KEY_VAR is not set/,
    ],
    [{ suppliers: [{ ...supplier, surprise: 1 }] }, /suppliers\[0\]/],
    [{ suppliers: [] }, /suppliers/],
    [{ suppliers: [{ ...supplier, models: [{ id: 'm' }] }] }, /suppliers\[0\]\.models\[0\]: a model needs a price/],
    [
      { suppliers: [{ ...supplier, models: [{ id: 'tts', input_usd_per_mtok: 1, capabilities: ['speech'] }] }] },
      /models\[0\]\.usd_per_mchar: a speech model needs usd_per_mchar/,
    ],
    [
      { suppliers: [{ ...supplier, models: [{ id: 'asr', input_usd_per_mtok: 1, capabilities: ['transcription'] }] }] },
      /models\[0\]\.usd_per_audio_minute: a transcription model needs/,
    ],
    [null, /invalid/],
  ];
  for (const [doc, pattern] of cases) assert.throws(() => buildCatalogue(doc, {}), pattern);
});

test('catalogue: the supplier credential comes from the named environment variable', () => {
  const cat = buildCatalogue({ suppliers: [{ ...supplier, api_key_env: 'SIM_API_KEY' }] }, { SIM_API_KEY: 'k-123' });
  assert.equal(cat.suppliers[0]!.apiKey, 'k-123');
});

test('loadConfig: reads the YAML file; broken YAML and missing files are named', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-config-'));
  const good = join(dir, 'good.yaml');
  writeFileSync(
    good,
    'suppliers:\n  - name: sim-eu\n    protocol: openai\n    base_url: http://127.0.0.1:8090/v1\n    region: EU\n    models:\n      - id: m1\n        input_usd_per_mtok: 1\n        output_usd_per_mtok: 2\n',
  );
  const cfg = loadConfig({ ...baseEnv, SVC_CATALOG: good });
  assert.equal(cfg.catalogue.suppliers[0]!.name, 'sim-eu');
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, 'suppliers: [\n');
  assert.throws(() => loadConfig({ ...baseEnv, SVC_CATALOG: bad }), /SVC_CATALOG: .* is not valid YAML/);
  assert.throws(() => loadConfig({ ...baseEnv, SVC_CATALOG: join(dir, 'nope.yaml') }), /SVC_CATALOG: cannot read/);
});
