import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import knexFactory from 'knex';
import pg from 'pg';
import type { PGlite } from '@electric-sql/pglite';
import { embeddedFilesDir, openDatabase, type Database } from './database.js';

/**
 * A fresh, migrated database for one test: a new PostgreSQL database on the server named by
 * DATABASE_URL (dropped on close), or in-memory embedded PGlite when DATABASE_URL is unset.
 * Tests that run in parallel therefore never see each other's rows.
 *
 * Migrating is the slow part, so it happens once: on PostgreSQL into a template database that
 * every test database is copied from, on PGlite into a data-directory snapshot each test loads
 * (kept in the temp directory, so the test processes that follow skip initdb and migrations too).
 */
export async function createTestDatabase(env: Record<string, string | undefined> = process.env): Promise<Database> {
  const url = env.DATABASE_URL;
  return url ? copyOfTemplate(url) : loadedSnapshot();
}

const migrationsDir = new URL('./migrations/', import.meta.url);

/** Names and contents of the migration files: a changed or added migration changes the hash. */
function migrationsFingerprint(): string {
  const hash = createHash('sha256');
  for (const name of readdirSync(migrationsDir)
    .filter((n) => /\.(ts|js)$/.test(n) && !n.endsWith('.d.ts'))
    .sort()) {
    hash
      .update(name)
      .update('\0')
      .update(readFileSync(new URL(name, migrationsDir)))
      .update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

/* ------------------------------------------------------------------ PostgreSQL: a template database */

const templates = new Map<string, Promise<string>>();

/** The migrated template on this server, built by whichever process gets there first. */
function templateOn(url: string): Promise<string> {
  let template = templates.get(url);
  if (!template) {
    template = buildTemplateOnce(url);
    templates.set(url, template);
    template.catch(() => templates.delete(url)); // a failure is retried by the next caller
  }
  return template;
}

/**
 * Creates `svc_tpl_<hash>` unless it exists. Test processes race for it, so the work is done
 * under an advisory lock, and in a scratch database renamed into place when complete: a process
 * killed mid-migration leaves a scratch database (dropped by the next builder), never a
 * half-migrated template.
 */
async function buildTemplateOnce(url: string): Promise<string> {
  const fingerprint = migrationsFingerprint();
  const template = `svc_tpl_${fingerprint}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    // One session holds the lock; it is released when the session ends, even on a crash.
    const lockKey = BigInt.asIntN(64, BigInt(`0x${fingerprint}`)).toString();
    await admin.query('select pg_advisory_lock($1::bigint)', [lockKey]);
    const exists = await admin.query('select 1 from pg_database where datname = $1', [template]);
    if (exists.rowCount) return template;
    const stale = await admin.query<{ datname: string }>('select datname from pg_database where datname like $1', [`${template}_build_%`]);
    for (const { datname } of stale.rows) await admin.query(`drop database if exists ${quoteIdent(datname)} with (force)`);

    const scratch = `${template}_build_${randomBytes(4).toString('hex')}`;
    await admin.query(`create database ${quoteIdent(scratch)}`);
    const db = await openDatabase({ kind: 'postgres', url: withDatabase(url, scratch), poolMax: 1 });
    try {
      await db.migrate();
    } finally {
      await db.close();
    }
    await admin.query(`alter database ${quoteIdent(scratch)} rename to ${quoteIdent(template)}`);
    await admin.query(`alter database ${quoteIdent(template)} is_template true`);
    return template;
  } finally {
    await admin.end(); // ends the session, so releases the lock
  }
}

async function copyOfTemplate(url: string): Promise<Database> {
  const template = await templateOn(url);
  const name = `svc_test_${randomBytes(6).toString('hex')}`;
  const admin = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
  try {
    await admin.raw('create database ?? template ??', [name, template]);
  } finally {
    await admin.destroy();
  }
  const db = await openDatabase({ kind: 'postgres', url: withDatabase(url, name), poolMax: 5 });
  return {
    ...db,
    close: async () => {
      await db.close();
      const dropper = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
      try {
        await dropper.raw('drop database if exists ?? with (force)', [name]);
      } finally {
        await dropper.destroy();
      }
    },
  };
}

function withDatabase(url: string, name: string): string {
  const target = new URL(url);
  target.pathname = `/${name}`;
  return target.toString();
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/* ------------------------------------------------------------------ PGlite: a data-directory snapshot */

let snapshot: Promise<Blob> | undefined;

/** A migrated PGlite data directory (a tarball): this process's, else the temp directory's, else made now. */
function migratedSnapshot(): Promise<Blob> {
  if (!snapshot) {
    snapshot = (async () => {
      const file = snapshotFile();
      const cached = readSnapshot(file);
      if (cached) return cached;
      const pglite = await newPGlite();
      const db = await openDatabase({ kind: 'embedded', dataDir: 'memory', pglite });
      let made: Blob;
      try {
        await db.migrate();
        made = await pglite.dumpDataDir('none');
      } finally {
        await db.close();
      }
      await writeSnapshot(file, made);
      return made;
    })();
    snapshot.catch(() => (snapshot = undefined)); // a failure is retried by the next caller
  }
  return snapshot;
}

/** Named by the migrations and the PGlite version: either changing makes a new snapshot. */
function snapshotFile(): string {
  const pgliteEntry = fileURLToPath(import.meta.resolve('@electric-sql/pglite'));
  const pglitePackage = readFileSync(join(dirname(pgliteEntry), '..', 'package.json'), 'utf8');
  const version = (JSON.parse(pglitePackage) as { version: string }).version;
  return join(tmpdir(), 'svc-test-pglite', `${migrationsFingerprint()}-pglite-${version}.tar`);
}

function readSnapshot(file: string): Blob | undefined {
  try {
    return new Blob([readFileSync(file)]);
  } catch {
    return undefined; // none yet
  }
}

/**
 * Written whole under a private name and renamed into place, so a reader never sees half a file;
 * snapshots of other migrations (40 MB each) are removed: a reader that opened one keeps it.
 */
async function writeSnapshot(file: string, made: Blob): Promise<void> {
  const partial = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.partial`;
  try {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(partial, Buffer.from(await made.arrayBuffer()));
    renameSync(partial, file);
    const current = basename(file, '.tar');
    for (const other of readdirSync(dirname(file))) {
      if (/\.(tar|files)$/.test(other) && !other.startsWith(current)) rmSync(join(dirname(file), other), { recursive: true, force: true });
    }
  } catch {
    rmSync(partial, { force: true }); // no cache: the next process migrates again, nothing worse
  }
}

/**
 * Fills a new data directory with the migrated database, for a test that starts a process on the
 * embedded database (SVC_DATA_DIR): the process then opens it without initdb and migrations.
 */
export async function seedEmbeddedDataDir(dataDir: string): Promise<void> {
  const target = embeddedFilesDir(dataDir);
  // Copied over another database's files, the copy merges with them (CI once failed half-way
  // through such a merge, ENOENT): a seed goes into a new directory only.
  if (existsSync(target) && readdirSync(target).length > 0)
    throw new Error(`seedEmbeddedDataDir: ${target} already holds a database; seed a new data directory`);
  cpSync(await unpackedSnapshot(), target, { recursive: true });
}

/** The snapshot unpacked into PGlite's files beside its tarball, once: copying them is quicker than unpacking. */
async function unpackedSnapshot(): Promise<string> {
  const unpacked = snapshotFile().replace(/\.tar$/, '.files');
  if (existsSync(join(unpacked, 'PG_VERSION'))) return unpacked;
  const partial = `${unpacked}.${process.pid}.${randomBytes(4).toString('hex')}.partial`;
  mkdirSync(partial, { recursive: true });
  try {
    const pglite = await newPGlite(await migratedSnapshot(), partial);
    await pglite.close();
    renameSync(partial, unpacked);
  } catch (error) {
    if (!existsSync(join(unpacked, 'PG_VERSION'))) throw error; // else another process unpacked it first
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
  return unpacked;
}

async function loadedSnapshot(): Promise<Database> {
  return openDatabase({ kind: 'embedded', dataDir: 'memory', pglite: await openMigratedPGlite() });
}

/**
 * A PGlite in memory holding the migrated database, for a test that needs PGlite itself: loading
 * the snapshot takes about a second, where a new PGlite's initdb takes eight on a busy machine.
 */
export async function openMigratedPGlite(): Promise<PGlite> {
  return newPGlite(await migratedSnapshot());
}

async function newPGlite(loadDataDir?: Blob, dataDir?: string): Promise<PGlite> {
  const { PGlite } = await import('@electric-sql/pglite');
  return PGlite.create({ ...(loadDataDir && { loadDataDir }), ...(dataDir && { dataDir }) });
}
