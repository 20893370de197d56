import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * One process at a time per data directory. The embedded database (PGlite) has no server of its
 * own: two processes opening the same directory would both write its files and corrupt it. The
 * lock is a file holding the owner's pid, created exclusively; a lock whose process is gone (a
 * crash, kill -9) is taken over. Within one process the lock is shared (`npm start` takes it
 * before anything else, then the database it opens takes it again).
 */
export class DataDirLockedError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `the data directory ${dataDir} is in use by process ${pid} (another \`npm start\` or gateway on the embedded database); ` +
        `stop that process, or point SVC_DATA_DIR at another directory`,
    );
    this.name = 'DataDirLockedError';
  }
}

const LOCK_FILE = 'svc.lock';
const held = new Map<string, number>(); // lock path → holders in this process

function ownerOf(path: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined; // gone meanwhile, or not yet written
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'; // alive, owned by another user
  }
}

function release(path: string): void {
  const holders = (held.get(path) ?? 1) - 1;
  if (holders > 0) {
    held.set(path, holders);
    return;
  }
  held.delete(path);
  if (ownerOf(path) === process.pid) unlinkSync(path);
}

let exitHookInstalled = false;
/** A process that ends without closing its database still leaves no lock behind. */
function releaseAllOnExit(): void {
  for (const path of held.keys()) if (ownerOf(path) === process.pid) unlinkSync(path);
  held.clear();
}

/** Takes the lock on `dataDir` (creating the directory); returns its release. Throws DataDirLockedError. */
export function lockDataDir(dataDir: string): () => void {
  const dir = resolve(dataDir);
  const path = join(dir, LOCK_FILE);
  const holders = held.get(path);
  if (holders) {
    held.set(path, holders + 1);
    return () => release(path);
  }
  mkdirSync(dir, { recursive: true });
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(path, `${process.pid}\n`, { flag: 'wx' });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = ownerOf(path);
    // A lock with no readable pid is being written right now by its creator: look again.
    if (owner !== undefined && owner !== process.pid && isAlive(owner)) throw new DataDirLockedError(dir, owner);
    if (attempt >= 20) throw new Error(`cannot take the lock ${path}: it stays unreadable; remove it if no process uses ${dir}`);
    // The owner is gone (or was this pid in a previous life): take the stale lock over.
    if (owner !== undefined) {
      try {
        unlinkSync(path);
      } catch {
        // another process took it over first; the next round sees its pid
      }
    }
  }
  if (!exitHookInstalled) {
    process.on('exit', releaseAllOnExit);
    exitHookInstalled = true;
  }
  held.set(path, 1);
  return () => release(path);
}
