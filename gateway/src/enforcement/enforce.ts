import type { ModelRoute } from '../../../core/config/index.js';
import {
  rateWindowKey,
  budgetWindow,
  spendGroupCapKey,
  spendGroupLabel,
  spendGroupsOf,
  spendGroupWindow,
  nanoPerUsd,
  toNano,
  toNanoCeil,
  leaseEndMinute,
  minuteOf,
  type BudgetWindow,
  type EnforcementVerdict,
} from '../../../core/budget/index.js';
import { ApiError } from '../../../core/errors/index.js';
import type { KeyRecord } from '../../../core/keys/index.js';
import type { Store } from '../../../core/store/index.js';
import { walletKey, walletLeasesKey } from '../../../core/wallets/index.js';
import type { KeyFlight } from './key-flights.js';
import {
  moneyLeases,
  noLease,
  reservationParts,
  reservePlan,
  settleOnSuccessor,
  settlePart,
  settlementMarkerTtlMs,
  type ReservationPlan,
  type Withdrawals,
} from './reservation-parts.js';
import type { SpendRecovery } from './spend-recovery.js';
import { inputTokenLimit } from '../routing/cost.js';

/** A reservation made before the supplier call; settle it exactly once with the actual cost. */
export interface Reservation {
  /** Replaces the reservation by the actual cost (0 when the request failed: a release). */
  settle(actualUsd: number): Promise<void>;
}

const nothingReserved: Reservation = { settle: async () => undefined };

/** What enforcement needs beyond the key: the store, the clock, and what rebuilds lost counters. */
export interface EnforcementDeps {
  store: Store;
  spend: SpendRecovery;
  clock: () => number;
}

/**
 * Upper bound of a request's cost over the routes it may take: input tokens bounded by the
 * request's input cap (its UTF-8 bytes — a token always covers at least one — plus an allowance per
 * image; tokens/input-cap.ts) within each model's context window, output by the request's max
 * tokens (or the model's max output, or the fallback cap), each at the most expensive candidate's
 * price. The charge is held to the same bounds (routing/cost.ts, boundedUsage).
 */
export function worstCaseUsd(
  routes: readonly ModelRoute[],
  inputCap: number | undefined,
  maxOutputTokens: number | undefined,
  fallbackOutput: number,
  choices = 1,
): number {
  let worst = 0;
  for (const route of routes) {
    const input = inputTokenLimit(route.model, inputCap);
    const output = (maxOutputTokens ?? route.model.maxOutputTokens ?? fallbackOutput) * choices;
    // Any input token may be a cache write, the dearest kind of input (cost.ts).
    const inputPrice = Math.max(route.model.inputUsdPerMtok, route.model.cacheWriteInputUsdPerMtok);
    worst = Math.max(worst, (input * inputPrice + output * route.model.outputUsdPerMtok) / 1e6);
  }
  return worst;
}

/**
 * The longest a request routed over `routes` can live once admitted: each of its attempts (at most
 * `maxAttempts` suppliers) runs until its supplier's deadline at the latest, and a supplier with a
 * credential pool may first be tried with each other credential, each failing before its
 * response's first byte (a credential's fault is its answer's status: failover.ts). So at most
 * the sum of the longest of those. Its reservation's lease lasts that, and a margin, before it
 * may be given back (core/budget/leases.ts).
 */
export function longestLifeMs(routes: readonly ModelRoute[], maxAttempts: number): number {
  const lives = routes
    .map(({ supplier }) => (Math.max(1, supplier.credentials.length) - 1) * supplier.firstByteTimeoutMs + supplier.timeoutMs)
    .sort((a, b) => b - a);
  let life = 0;
  for (const supplierLife of lives.slice(0, maxAttempts)) life += supplierLife;
  return life;
}

/**
 * The enforcement step for one request (docs/architecture.md §The request hot path, step 4),
 * in one atomic store call: the key's rate limit, a budget reservation of the worst-case cost,
 * the same reservation against each spend group's monthly budget (the organisation of a portal
 * key, the user who created it) and the payer's wallet reservation.
 * A key without any of them costs no store call at all. Refusals are catalogue errors. On Redis
 * Cluster the call is one per shard the request touches, at once (reservation-parts.ts).
 */
export async function enforce(
  deps: EnforcementDeps,
  key: KeyRecord,
  reserveUsd: number,
  requestId: string,
  /** The request's longest life (longestLifeMs), asked only when money is reserved. */
  lifeMs: () => number = () => 0,
): Promise<Reservation> {
  const budgeted = key.budgetLimitUsd !== null;
  const walletEnforced = key.payerId !== null && key.payerId !== undefined;
  const groups = spendGroupsOf(key);
  // Newer budget settings than this gateway's requests of the key in flight were admitted under:
  // they are carried into the new counter first (key-flights.ts; usually done already, when the
  // change was heard). Only a request that can cost something: count_tokens enforces a copy of its
  // key with the budget left out (rate limit only), which must not pass for the key's settings.
  if (reserveUsd > 0 && deps.spend.flights.see(key)) await deps.spend.carryFlights(deps.store, key, new Date(deps.clock()));
  if (!budgeted && !walletEnforced && groups.length === 0 && key.rateLimitRpm === null)
    return inFlight(deps, key, requestId, reserveUsd > 0 ? toNanoCeil(reserveUsd) : 0, deps.clock(), lifeMs);
  const now = new Date(deps.clock());
  const window: BudgetWindow = budgetWindow(key.id, key.budgetPeriod ?? 'monthly', now, key.budgetPeriodSince);
  const groupWindows = groups.map((group) => spendGroupWindow(group, now));
  const reserveNano = budgeted || walletEnforced || groups.length > 0 ? toNanoCeil(reserveUsd) : 0;
  const wallet = walletEnforced ? walletKey(key.payerId!) : undefined;
  const plan: ReservationPlan = {
    requestId,
    reserveNano,
    nowMinute: minuteOf(now.getTime()),
    leaseEndMinute: reserveNano > 0 ? leaseEndMinute(now.getTime(), lifeMs()) : 0,
    leaseHolder: deps.spend.leaseHolder,
    rate: key.rateLimitRpm ? { key: rateWindowKey(key.id), rpm: key.rateLimitRpm } : null,
    budget: budgeted ? { window, capNano: toNano(key.budgetLimitUsd!) } : null,
    wallet: wallet
      ? { key: wallet, leasesKey: walletLeasesKey(key.payerId!), creditNano: key.payerCreditUsd ? toNano(key.payerCreditUsd) : 0 }
      : null,
    groups: groups.map((group, i) => ({ window: groupWindows[i]!, capKey: spendGroupCapKey(group) })),
  };
  const parts = reservationParts(plan, deps.store.sharded);
  const withdrawals: Withdrawals = {
    withdraw: (part, generations, run) => {
      const leases = moneyLeases(plan, part, generations);
      return deps.spend.settle(run, deps.spend.hold(leases, reserveNano), { leases, nano: reserveNano });
    },
  };
  let attempt = 0;
  let reserved = await reservePlan(deps.store, plan, parts, attempt, withdrawals);
  let verdict = reserved.verdict;
  // A counter or mirror missing from the store (a new period, a cold start, a store that lost
  // its data) is rebuilt from PostgreSQL, then asked again; at most once each.
  const unknown = (v: EnforcementVerdict) =>
    v.kind === 'budget_unknown' || v.kind === 'wallet_unknown' || v.kind === 'group_budget_unknown';
  for (let rebuilds = 0; rebuilds < 2 + groups.length && unknown(verdict); rebuilds++) {
    if (verdict.kind === 'budget_unknown') await deps.spend.rebuildBudget(deps.store, key, window, now);
    else if (verdict.kind === 'group_budget_unknown')
      await deps.spend.rebuildSpendGroup(deps.store, groups[verdict.group]!, groupWindows[verdict.group]!, now);
    else await deps.spend.rebuildWallet(key.payerId!, wallet!);
    reserved = await reservePlan(deps.store, plan, parts, ++attempt, withdrawals);
    verdict = reserved.verdict;
  }
  deps.spend.storeAnswered();
  switch (verdict.kind) {
    case 'admitted':
      break;
    case 'rate_limited':
      throw new ApiError('rate_limit_exceeded', {
        retryAfterSeconds: Math.max(1, Math.ceil(verdict.retryAfterMs / 1000)),
        humanMessage: `This key allows ${key.rateLimitRpm} requests per minute; retry after the Retry-After delay`,
      });
    case 'budget_exceeded': {
      // Say why with numbers: the worst case this request must reserve (its max_tokens at the
      // output price) against what the budget still has once in-flight reservations are counted,
      // so a positive budget_remaining and a refusal never look contradictory.
      const capNano = toNano(key.budgetLimitUsd!);
      const remainingNano = Math.max(0, capNano - verdict.usedNano);
      const resets = window.periodEnd ? `; it resets ${window.periodEnd.toISOString()}` : '';
      throw new ApiError('budget_exceeded', {
        humanMessage:
          `This key's ${key.budgetPeriod ?? 'monthly'} budget of ${usdText(capNano)} USD has ${usdText(remainingNano)} USD left ` +
          `(requests in flight included), and this request needs up to ${usdText(reserveNano)} USD reserved for its worst case ` +
          `(its input and its output cap at the model's prices: max_tokens, or the gateway's default cap when none is sent; ` +
          `for audio, its characters or minutes at the model's price); send a smaller request (a lower max_tokens) or raise the budget${resets}`,
        details: {
          budget_limit: key.budgetLimitUsd,
          budget_used: verdict.usedNano / nanoPerUsd,
          budget_remaining: remainingNano / nanoPerUsd,
          reserve_usd: reserveNano / nanoPerUsd,
        },
      });
    }
    case 'group_budget_exceeded': {
      const group = groups[verdict.group]!;
      const remainingNano = Math.max(0, verdict.capNano - verdict.usedNano);
      const who = group.scope === 'organisation' ? 'an organisation administrator' : 'a platform administrator';
      throw new ApiError('budget_exceeded', {
        humanMessage:
          `${spendGroupLabel(group)} of ${usdText(verdict.capNano)} USD has ${usdText(remainingNano)} USD left ` +
          `(requests in flight included), and this request needs up to ${usdText(reserveNano)} USD reserved for its worst case; ` +
          // The cap is the tighter of two sources the gateway cannot tell apart (docs/budgets.md): both are named.
          `${who} can raise it, unless it is the hard stop of a budget policy, which is changed on the portal's Budgets page; ` +
          `it resets ${groupWindows[verdict.group]!.periodEnd!.toISOString()}`,
        details: {
          scope: group.scope,
          ...(group.scope === 'organisation' ? { organisation_id: group.id } : { user_id: group.id }),
          budget_limit: verdict.capNano / nanoPerUsd,
          budget_used: verdict.usedNano / nanoPerUsd,
          budget_remaining: remainingNano / nanoPerUsd,
          reserve_usd: reserveNano / nanoPerUsd,
        },
      });
    }
    case 'group_budget_unknown':
      throw new ApiError('current_quota_unavailable', {
        humanMessage: `${spendGroupLabel(groups[verdict.group]!)} counter could not be rebuilt; retry in a few seconds`,
      });
    case 'wallet_empty':
      throw new ApiError('billing_limit_reached', {
        humanMessage:
          `The wallet paying for this key (${key.payerId}) has not enough funds for this request; ` +
          'top it up (in the portal: Billing, Add funds) or ask its billing administrator',
        details: { payer: key.payerId },
      });
    case 'wallet_unknown':
      throw new ApiError('billing_unavailable', { details: { payer: key.payerId } });
    case 'budget_unknown':
      throw new ApiError('current_quota_unavailable', {
        humanMessage: "This key's budget counter could not be rebuilt; retry in a few seconds",
      });
    default: {
      const unreachable: never = verdict;
      throw new Error(`unknown verdict ${JSON.stringify(unreachable)}`);
    }
  }
  // Not its worst case when nothing holds money (a key with only a rate limit): what a newer
  // budget counter would carry for it (key-flights.ts) is computed as for any other.
  const flightNano = reserveNano > 0 ? reserveNano : reserveUsd > 0 ? toNanoCeil(reserveUsd) : 0;
  if (reserveNano === 0) return inFlight(deps, key, requestId, flightNano, now.getTime(), lifeMs);
  const flight = deps.spend.flights.admit(
    {
      requestId,
      keyId: key.id,
      counterKey: budgeted ? window.counterKey : null,
      at: now.getTime(),
      nano: reserveNano,
      leaseEnd: () => plan.leaseEndMinute,
    },
    key,
  );
  // In flight until settled: a counter rebuilt meanwhile still counts this reservation. Each
  // part holding money (one on a single store) is held and settled on its own.
  const { generations } = reserved;
  const moneyParts = parts
    .map((part, i) => ({ part, generations: generations[i]!, leases: moneyLeases(plan, part, generations[i]!) }))
    .filter((p) => p.leases.length > 0);
  const releases = moneyParts.map((p) => deps.spend.hold(p.leases, reserveNano));
  let settled = false;
  return {
    settle: async (actualUsd: number) => {
      if (settled) return;
      settled = true;
      // From here its audit record is in the journal a rebuild reads (accounting.ts appends it in this tick).
      flight.settling = true;
      // The actual cost is bounded by the reservation; a supplier reporting more is charged in
      // full (never hidden) but cannot have been spent concurrently by others beyond the cap.
      // A settlement the store refuses is retried until it takes it (exactly once: the marker).
      const actualNano = toNano(actualUsd);
      await Promise.all([
        ...moneyParts.map((p, i) =>
          deps.spend.settle((skipped) => settlePart(deps.store, plan, p.part, p.generations, actualNano, skipped), releases[i]!, {
            leases: p.leases,
            nano: reserveNano,
          }),
        ),
        settleFlight(deps, flight, actualNano),
      ]);
    },
  };
}

/**
 * The reservation of an admitted request that holds no money (its key has no budget, wallet nor
 * spend group): nothing to settle unless the key's budget settings gave it a counter while the
 * request was in flight (key-flights.ts). A request that can cost nothing is not followed.
 */
function inFlight(deps: EnforcementDeps, key: KeyRecord, requestId: string, nano: number, at: number, lifeMs: () => number): Reservation {
  if (nano === 0) return nothingReserved;
  let end: number | undefined;
  const leaseEnd = () => (end ??= leaseEndMinute(at, lifeMs()));
  const flight = deps.spend.flights.admit({ requestId, keyId: key.id, counterKey: null, at, nano, leaseEnd }, key);
  let settled = false;
  return {
    settle: (actualUsd: number) => {
      if (settled) return Promise.resolve();
      settled = true;
      flight.settling = true;
      return settleFlight(deps, flight, toNano(actualUsd));
    },
  };
}

/**
 * Settles an admitted request on its key's newer budget counter when the key's budget settings
 * changed while it was in flight (key-flights.ts); otherwise only ends its flight. Owed and
 * retried like any settlement, and left alone by a counter its own gateway rebuilt meanwhile
 * (whose rebuild read the request's audit record).
 */
function settleFlight(deps: EnforcementDeps, flight: KeyFlight, actualNano: number): Promise<void> {
  const { flights } = deps.spend;
  const successor = flights.successor(flight);
  if (!successor) {
    flights.end(flight);
    return Promise.resolve();
  }
  const field = flight.carried?.key === successor.counterKey ? flight.carried.field : noLease;
  const request = {
    requestId: flight.requestId,
    reserveNano: flight.nano,
    actualNano,
    markerTtlMs: settlementMarkerTtlMs({ leaseEndMinute: flight.leaseEnd(), nowMinute: minuteOf(flight.at) }),
  };
  return deps.spend.settle(
    (skipped) => (skipped.has(successor.counterKey) ? Promise.resolve() : settleOnSuccessor(deps.store, successor, field, request)),
    () => flights.end(flight),
    // Its lease there (or none), so a rebuild of that counter while this is owed leaves it alone.
    { leases: [{ key: successor.counterKey, field }], nano: flight.nano },
  );
}

/**
 * Nano-USD as a decimal USD string without float noise or trailing zeros (0.000012, 2.5). Past
 * 2^53 nano-USD (~9 million USD: a budget may be up to a billion) a count is no longer an exact
 * integer, so its digit-by-digit text would invent digits; there the amount is given to 15
 * significant digits, all a double holds.
 */
export function usdText(nano: number): string {
  if (!Number.isSafeInteger(nano)) return String(Number((nano / nanoPerUsd).toPrecision(15)));
  const whole = Math.trunc(nano / nanoPerUsd);
  const fraction = String(nano % nanoPerUsd)
    .padStart(9, '0')
    .replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : String(whole);
}
