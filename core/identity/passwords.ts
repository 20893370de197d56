// Password hashing with Argon2id (@node-rs/argon2: prebuilt, no install scripts). Parameters are
// OWASP's minimum for Argon2id (19 MiB, 2 passes, 1 lane), encoded in each hash so they can be
// raised later without breaking old hashes.
import { hash, verify } from '@node-rs/argon2';

const argon2id = 2; // Algorithm.Argon2id (a const enum, which isolatedModules cannot import)
const options = { algorithm: argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

/** The Argon2id hash of a password. */
export function hashPassword(password: string): Promise<string> {
  return hash(password, options);
}

// Verified against when the account does not exist, so a sign-in for an unknown address costs
// the same time as a wrong password and timing does not tell which addresses have accounts.
let decoy: Promise<string> | undefined;

/** Whether `password` matches `passwordHash`; with no hash, spends the same effort and says no. */
export async function verifyPassword(passwordHash: string | null, password: string): Promise<boolean> {
  if (passwordHash === null) {
    decoy ??= hashPassword('decoy password for absent accounts');
    await verify(await decoy, password).catch(() => false);
    return false;
  }
  return verify(passwordHash, password).catch(() => false);
}
