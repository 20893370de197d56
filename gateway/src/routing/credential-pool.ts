// Supplier credential pools (docs/routing.md "Credential pools"). A supplier may hold several
// credentials; the gateway spreads attempts over them round-robin and sidelines one that the
// supplier rate-limits (429, for its Retry-After or the cool-down) or rejects (401/403, for the
// longer auth cool-down), apart from the supplier's own circuit: one throttled key does not take
// the supplier out of routing while others still work. Like SupplierHealth, the hot path reads
// in-process state only; a sidelining is written to the store and announced to every replica,
// and each event goes to the token log (core/routing/credential-events.ts) without waiting.
import type { Supplier, SupplierCredential } from '../../../core/config/index.js';
import type { ApiError } from '../../../core/errors/index.js';
import { credentialSidelinedKey, type CredentialEvent, type CredentialEventKind } from '../../../core/routing/index.js';
import type { Store } from '../../../core/store/index.js';

/** Cool-downs of a sidelined credential (settings SVC_CREDENTIAL_*_COOLDOWN_MS). */
export interface CredentialPolicy {
  rateLimitedCooldownMs: number;
  authFailureCooldownMs: number;
}

export const defaultCredentialPolicy: CredentialPolicy = { rateLimitedCooldownMs: 60_000, authFailureCooldownMs: 300_000 };

const channel = 'credentials:changed';
/** Marks a sidelined credential until one replica reports it recovered (so it is reported once). */
const recoveringKey = (supplier: string, credential: string) => `${credentialSidelinedKey(supplier, credential)}:recovering`;
const recoveringTtlMs = 24 * 3_600_000;
const id = (supplier: string, credential: string) => `${supplier}\n${credential}`;

/** Whether a failed attempt says something about the credential rather than the supplier. */
export function credentialFailureKind(error: ApiError): Extract<CredentialEventKind, 'rate_limited' | 'auth_failure'> | undefined {
  const upstream = Number((error.details as { upstream_status?: unknown } | undefined)?.upstream_status ?? error.status);
  if (upstream === 429) return 'rate_limited';
  if (upstream === 401 || upstream === 403) return 'auth_failure';
  return undefined;
}

export class CredentialPool {
  private readonly sidelinedUntil = new Map<string, number>();
  /** Credentials whose sideline this replica saw, until an attempt with them succeeds. */
  private readonly watching = new Set<string>();
  private readonly cursor = new Map<string, number>();
  private unsubscribe: (() => Promise<void>) | undefined;

  constructor(
    private readonly store: Store,
    private readonly record: (event: CredentialEvent) => void,
    /** `suppliers`: the catalogue's current suppliers (a live catalogue changes them). */
    private readonly suppliers: () => readonly Supplier[],
    private readonly options: { policy?: CredentialPolicy; replica?: string; now?: () => number } = {},
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  async start(): Promise<void> {
    this.unsubscribe = await this.store.subscribe(channel, (message) => {
      const [supplier, credential, until] = message.split('|');
      if (supplier && credential) this.mark(supplier, credential, Number(until));
    });
  }

  async stop(): Promise<void> {
    await this.unsubscribe?.();
  }

  /** Loads sidelinings made before this replica started. */
  async load(suppliers: readonly Supplier[]): Promise<void> {
    await Promise.all(
      suppliers.flatMap((s) =>
        s.credentials.map(async (c) => {
          const until = Number(await this.store.get(credentialSidelinedKey(s.name, c.name)));
          if (until > this.now()) this.mark(s.name, c.name, until);
        }),
      ),
    );
  }

  private mark(supplier: string, credential: string, until: number): void {
    const key = id(supplier, credential);
    this.sidelinedUntil.set(key, Math.max(until, this.sidelinedUntil.get(key) ?? 0));
    this.watching.add(key);
  }

  /** True while the credential is out of rotation. */
  isSidelined(supplier: string, credential: string): boolean {
    return (this.sidelinedUntil.get(id(supplier, credential)) ?? 0) > this.now();
  }

  /** Until when (epoch ms) the credential is out of rotation, or undefined. */
  sidelinedUntilMs(supplier: string, credential: string): number | undefined {
    const until = this.sidelinedUntil.get(id(supplier, credential));
    return until !== undefined && until > this.now() ? until : undefined;
  }

  /** As `exhausted`, by supplier name (what candidate ranking asks); no work while nothing is sidelined. */
  exhaustedByName(supplier: string): boolean {
    if (this.sidelinedUntil.size === 0) return false;
    const found = this.suppliers().find((s) => s.name === supplier);
    return found !== undefined && this.exhausted(found);
  }

  /** A pooled supplier all of whose credentials are sidelined: routed last, like an open circuit. */
  exhausted(supplier: Supplier): boolean {
    return supplier.credentials.length > 0 && supplier.credentials.every((c) => this.isSidelined(supplier.name, c.name));
  }

  /**
   * The credential for the next attempt on `supplier`, never one already `tried` by this request:
   * the next in rotation (round-robin); if every untried one is sidelined, the one back soonest
   * (a last resort, as an open circuit is tried last). Undefined without a pool or when all were tried.
   */
  pick(supplier: Supplier, tried: ReadonlySet<string>): SupplierCredential | undefined {
    const pool = supplier.credentials;
    if (pool.length === 0) return undefined;
    const start = this.cursor.get(supplier.name) ?? 0;
    let fallback: SupplierCredential | undefined;
    for (let i = 0; i < pool.length; i++) {
      const credential = pool[(start + i) % pool.length]!;
      if (tried.has(credential.name)) continue;
      if (!this.isSidelined(supplier.name, credential.name)) {
        this.cursor.set(supplier.name, (start + i + 1) % pool.length);
        return credential;
      }
      const until = this.sidelinedUntil.get(id(supplier.name, credential.name))!;
      if (!fallback || until < this.sidelinedUntil.get(id(supplier.name, fallback.name))!) fallback = credential;
    }
    return fallback;
  }

  /** Whether the pool holds a credential this request has not tried yet (in rotation or not). */
  hasUntried(supplier: Supplier, tried: ReadonlySet<string>): boolean {
    return supplier.credentials.some((c) => !tried.has(c.name));
  }

  /** Sidelines the credential for every replica and logs why. */
  async recordFailure(supplier: string, credential: string, kind: 'rate_limited' | 'auth_failure', error: ApiError): Promise<void> {
    const policy = this.options.policy ?? defaultCredentialPolicy;
    const now = this.now();
    const cooldown = kind === 'rate_limited' ? policy.rateLimitedCooldownMs : policy.authFailureCooldownMs;
    const until = now + Math.max(cooldown, (error.retryAfterSeconds ?? 0) * 1000);
    this.mark(supplier, credential, until);
    this.record({
      at: new Date(now),
      provider: supplier,
      keyName: credential,
      kind,
      errorKind: error.code,
      upstreamStatus: Number((error.details as { upstream_status?: unknown } | undefined)?.upstream_status ?? error.status),
      message: error.humanMessage,
      source: 'gateway',
      replica: this.options.replica,
      sidelinedUntil: new Date(until),
    });
    await this.store.set(credentialSidelinedKey(supplier, credential), String(until), { ttlMs: until - now });
    await this.store.set(recoveringKey(supplier, credential), String(until), { ttlMs: recoveringTtlMs });
    await this.store.publish(channel, `${supplier}|${credential}|${until}`);
  }

  /**
   * An attempt with the credential succeeded. If it had been sidelined, the first replica to see
   * it work again logs it recovered (one store write, only for credentials this replica watched).
   */
  async recordSuccess(supplier: string, credential: string): Promise<void> {
    const key = id(supplier, credential);
    if (!this.watching.has(key) || this.isSidelined(supplier, credential)) return;
    this.watching.delete(key);
    this.sidelinedUntil.delete(key);
    if ((await this.store.del(recoveringKey(supplier, credential))) === 0) return;
    this.record({
      at: new Date(this.now()),
      provider: supplier,
      keyName: credential,
      kind: 'recovered',
      source: 'gateway',
      replica: this.options.replica,
    });
  }
}
