import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateSecret } from '../../core/keys/index.js';

/**
 * Secrets of a local demo installation, kept in `<data dir>/local-credentials.json` (mode
 * 0600) like an `.env` file, so `npm start` can print them again after a restart. The database
 * holds only hashes; production takes these from the environment / Kubernetes Secrets instead.
 */
export interface LocalCredentials {
  adminKey: string;
  pepper: string;
  demoKey?: string;
  /** Password of npm start's verified demo owner (owner@demo.local) in the portal. */
  demoOwnerPassword?: string;
  /** That account's id: a later start does not make it again once an administrator deleted it. */
  demoOwnerId?: number;
}

/** Reads the local credentials, creating admin key and pepper on first start. */
export function loadLocalCredentials(dataDir: string): LocalCredentials {
  const path = join(dataDir, 'local-credentials.json');
  if (existsSync(path)) return JSON.parse(readFileSync(path, 'utf8')) as LocalCredentials;
  const fresh: LocalCredentials = { adminKey: generateSecret('admin'), pepper: generateSecret('admin') };
  saveLocalCredentials(dataDir, fresh);
  return fresh;
}

/** Writes the local credentials file, readable by its owner only. */
export function saveLocalCredentials(dataDir: string, credentials: LocalCredentials): void {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, 'local-credentials.json');
  writeFileSync(path, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
}
