// A portal on loopback for HTTP and browser tests: a fresh test database (PostgreSQL from
// DATABASE_URL, else PGlite), the shared test store (Redis from REDIS_URL, else memory), the
// demo catalogue, and a log captured in memory so tests can check what was (not) logged.
import { Writable } from 'node:stream';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { buildCatalogue, parsePortalSettings, type Catalogue } from '../../core/config/index.js';
import type { Database } from '../../core/db/index.js';
import { createTestDatabase } from '../../core/db/testing.js';
import type { Store } from '../../core/store/index.js';
import { openSharedTestStores } from '../../core/store/testing.js';
import { demoCatalogue } from '../../deploy/local/demo-catalogue.js';
import type { Tracing } from '../../core/telemetry/index.js';
import { startPortal, type RunningPortal } from '../../portal/src/server.js';
import { freePort } from './free-port.js';

/** Settings every harness portal gets unless the test overrides them. */
export const harnessSecrets = {
  SVC_ADMIN_KEY: 'test-admin-key-0123456789abcdefghijklmnopqrstuvwxyz',
  SVC_KEY_PEPPER: 'test-pepper-0123456789abcdefghijklmnopqrstuvwxyz',
};

/** A running portal plus what the test may look at. */
export interface PortalHarness {
  portal: RunningPortal;
  url: string;
  database: Database;
  store: Store;
  /** Lines announced for outbox-mode email (recipient, file and link), newest last. */
  mail: string[];
  /** The last emailed link to `email` whose URL contains `pathPart` (outbox mode). */
  lastLink(email: string, pathPart: string): string | undefined;
  /**
   * The last emailed link to `email` containing `pathPart`, once the mail every instance handed
   * over has been written (the portal sends mail after its answer: mailer.sendLater); throws when
   * there is none.
   */
  emailedLink(email: string, pathPart: string): Promise<string>;
  /** Resolves once every instance has sent (or failed to send) the mail handed over so far. */
  mailSettled(): Promise<void>;
  /** Every log line the portal wrote, as text. */
  logText(): string;
  /** Another portal instance on the same database and store (a second replica). */
  replica(): Promise<RunningPortal>;
  close(): Promise<void>;
}

/** Starts a portal; `settings` are extra environment variables (SVC_SMTP_URL, SVC_SSO_A_*…). */
export async function startPortalHarness(
  options: {
    settings?: Record<string, string>;
    /** Settings that depend on the portal's own address (an OpenID Provider's redirect URI). */
    settingsFor?: (baseUrl: string) => Promise<Record<string, string>>;
    clock?: () => number;
    dataDir?: string;
    /** Tracing the portal uses (tests give one exporting into memory). */
    tracing?: Tracing;
    /** The catalogue (default: the demo catalogue `npm start` serves). */
    catalogue?: Catalogue;
  } = {},
): Promise<PortalHarness> {
  const database = await createTestDatabase();
  // Outbox files of this harness only; removed at close.
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'svc-portal-')));
  const stores = openSharedTestStores();
  const lines: string[] = [];
  const mail: string[] = [];
  const announce = (line: string) => mail.push(line);
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  const logger = pino({ level: 'info', base: { service: 'portal' } }, sink);
  // The demo catalogue `npm start` serves; no simulator is needed, the portal only reads prices.
  const catalogue = options.catalogue ?? buildCatalogue(demoCatalogue('http://127.0.0.1:9'), {});
  const env = (baseUrl: string) => ({
    ...harnessSecrets,
    SVC_CATALOG: 'unused-catalogue-given-in-overrides.yaml',
    SVC_CATALOG_SOURCE: 'file',
    SVC_HOST: '127.0.0.1',
    PORTAL_PORT: '0',
    SVC_METRICS_PORT: '0',
    SVC_DATA_DIR: dataDir,
    SVC_PORTAL_BASE_URL: baseUrl,
    // Every test user signs up from 127.0.0.1: the per-client mail bound is tested where it is set.
    SVC_AUTH_EMAILS_PER_CLIENT: '100000',
    ...options.settings,
  });
  // The base URL must be the portal's own origin (same-origin check, links): a free port is taken
  // first and the portal started on it. (It was started once to learn a port and again on it —
  // two starts per suite on PGlite; the port was free again between the two just as it is here.)
  const port = await freePort();
  const replicaStores: Store[] = [];
  const baseUrl = `http://127.0.0.1:${port}`;
  const late = options.settingsFor ? await options.settingsFor(baseUrl) : {};
  const start = (p: number) => {
    const store = stores.another();
    if (store !== stores.main) replicaStores.push(store);
    return startPortal(parsePortalSettings({ ...env(baseUrl), ...late, PORTAL_PORT: String(p) }), {
      database,
      store,
      logger,
      catalogue,
      clock: options.clock,
      announce,
      metricsOnEphemeralPort: true,
      tracing: options.tracing,
    });
  };
  const portal = await start(port);
  const replicas: RunningPortal[] = [];
  const lastLink = (email: string, pathPart: string) =>
    mail
      .filter((m) => m.includes(`email to ${email} `))
      .map((m) => /link: (\S+)/.exec(m)?.[1])
      .filter((l): l is string => Boolean(l && l.includes(pathPart)))
      .at(-1);
  const mailSettled = async () => {
    for (const instance of [portal, ...replicas]) await instance.deps.mailer.settled();
  };
  return {
    portal,
    url: portal.url,
    database,
    store: stores.main,
    mail,
    lastLink,
    mailSettled,
    emailedLink: async (email, pathPart) => {
      await mailSettled();
      const link = lastLink(email, pathPart);
      if (link === undefined) throw new Error(`no email to ${email} with a link containing ${pathPart}; mail sent: ${mail.join('\n')}`);
      return link;
    },
    logText: () => lines.join(''),
    replica: async () => {
      const r = await start(0);
      replicas.push(r);
      return r;
    },
    close: async () => {
      for (const r of replicas) await r.stop();
      await portal.stop();
      for (const s of replicaStores) await s.close();
      await stores.main.close();
      await database.close();
      if (!options.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
