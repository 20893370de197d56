import { afterEach, expect, test } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataDirLockedError, lockDataDir } from './data-dir-lock.js';
import { openDatabase } from './database.js';
import { seedEmbeddedDataDir } from './testing.js';
import { waitFor } from '../../test/support/wait-for.js';

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-lock-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A live process other than this one, holding nothing: its pid stands for "another npm start". */
function otherProcess(): number {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  cleanups.push(() => void child.kill('SIGKILL'));
  return child.pid!;
}

test('a data directory held by a live process is refused, naming that process', () => {
  const dir = tempDir();
  const pid = otherProcess();
  writeFileSync(join(dir, 'svc.lock'), `${pid}\n`);
  expect(() => lockDataDir(dir)).toThrow(DataDirLockedError);
  expect(() => lockDataDir(dir)).toThrow(`in use by process ${pid}`);
  expect(readFileSync(join(dir, 'svc.lock'), 'utf8')).toBe(`${pid}\n`);
});

test("a dead process's lock is taken over, and released when the last holder lets go", () => {
  const dir = tempDir();
  const dead = spawnSync(process.execPath, ['-e', '']).pid;
  writeFileSync(join(dir, 'svc.lock'), `${dead}\n`);
  const release = lockDataDir(dir);
  const again = lockDataDir(dir); // the same process may take it twice (npm start, then its database)
  expect(readFileSync(join(dir, 'svc.lock'), 'utf8')).toBe(`${process.pid}\n`);
  release();
  expect(existsSync(join(dir, 'svc.lock'))).toBe(true);
  again();
  expect(existsSync(join(dir, 'svc.lock'))).toBe(false);
});

test('the embedded database locks its directory while open: a second process cannot open it', async () => {
  const dir = tempDir();
  await seedEmbeddedDataDir(dir); // opened without initdb
  const db = await openDatabase({ kind: 'embedded', dataDir: dir });
  let open = true;
  cleanups.push(async () => {
    if (open) await db.close();
  });
  const second = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '-e',
      `import('./core/db/database.ts').then((m) => m.openDatabase({ kind: 'embedded', dataDir: ${JSON.stringify(dir)} })).catch((e) => { console.error(e.message); process.exit(3); })`,
    ],
    { cwd: join(import.meta.dirname, '../..'), stdio: ['ignore', 'ignore', 'pipe'] },
  );
  cleanups.push(() => void second.kill('SIGKILL'));
  let stderr = '';
  second.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let code: number | null = null;
  second.on('exit', (exitCode) => (code = exitCode));
  await waitFor('the second process to give up', () => code !== null, 50_000);
  expect(code).toBe(3);
  expect(stderr).toContain(`in use by process ${process.pid}`);

  open = false;
  await db.close();
  expect(existsSync(join(dir, 'svc.lock'))).toBe(false);
});
