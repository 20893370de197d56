// Scheduled reports (docs/reports.md "Schedules"): a saved report run daily, weekly or monthly at
// a wall-clock time in the owner's time zone (daylight saving included), its export mailed as a
// link to recipients of the owner's organisation. Each due time becomes one `schedule_runs` row
// (unique per schedule and due time), so however many replicas tick at once, it runs once.
import type { Knex } from 'knex';
import { ApiError } from '../errors/index.js';

export const cadences = ['daily', 'weekly', 'monthly'] as const;
export type Cadence = (typeof cadences)[number];

export interface ScheduleSpec {
  cadence: Cadence;
  /** `HH:MM`, 24-hour, in `timeZone`. */
  timeOfDay: string;
  /** Weekly: 0 = Sunday … 6 = Saturday. */
  weekday?: number | undefined;
  /** Monthly: 1–28 (every month has it). */
  monthDay?: number | undefined;
  timeZone: string;
}

/** Whether `zone` is an IANA time zone this runtime knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The wall-clock parts of `instant` in `zone`. */
function wallClock(instant: Date, zone: string) {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      weekday: 'short',
    })
      .formatToParts(instant)
      .map((p) => [p.type, p.value]),
  );
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour),
    minute: Number(parts.minute),
    weekday: ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'].indexOf(parts.weekday!),
  };
}

/** How far `zone`'s wall clock is ahead of UTC at `instant`, in milliseconds (negative west of UTC). */
function offsetAt(instant: number, zone: string): number {
  const shown = wallClock(new Date(instant), zone);
  return Date.UTC(shown.year, shown.month - 1, shown.day, shown.hour, shown.minute) - instant;
}

const dayMs = 86_400_000;

/**
 * The instant at which `zone` shows this local date and time. Shown twice (the clocks fall back):
 * the first, so the run happens once. Never shown (the clocks spring forward over it): the first
 * instant after the gap, at the same wall-clock time shifted forward by the gap (02:30 → 03:30,
 * 00:30 → 01:30 the same day) — in every zone, east or west of UTC.
 */
function instantOf(year: number, month: number, day: number, hour: number, minute: number, zone: string): Date {
  const asUtc = Date.UTC(year, month - 1, day, hour, minute);
  // The offsets a day either side: no zone changes its clocks twice within two days.
  const before = offsetAt(asUtc - dayMs, zone);
  const after = offsetAt(asUtc + dayMs, zone);
  const showing = [asUtc - before, asUtc - after].filter((instant) => offsetAt(instant, zone) === asUtc - instant);
  if (showing.length > 0) return new Date(Math.min(...showing));
  // In the gap: read with the offset before it, the time lands as far past the gap's end as it was past its start.
  return new Date(asUtc - before);
}

/** The first run strictly after `after`. */
export function nextRunAfter(spec: ScheduleSpec, after: Date): Date {
  const [hour, minute] = spec.timeOfDay.split(':').map(Number) as [number, number];
  const start = wallClock(after, spec.timeZone);
  // Walk local days from the day of `after` (at most ~62 days covers every monthly case).
  for (let offset = 0; offset < 63; offset++) {
    const date = new Date(Date.UTC(start.year, start.month - 1, start.day + offset));
    const y = date.getUTCFullYear();
    const m = date.getUTCMonth() + 1;
    const d = date.getUTCDate();
    if (spec.cadence === 'weekly' && date.getUTCDay() !== spec.weekday) continue;
    if (spec.cadence === 'monthly' && d !== spec.monthDay) continue;
    const at = instantOf(y, m, d, hour, minute, spec.timeZone);
    if (at > after) return at;
  }
  throw new Error(`no run of ${JSON.stringify(spec)} within 63 days of ${after.toISOString()}`);
}

/** A schedule as pages and JSON show it. */
export interface ScheduleView {
  schedule_id: number;
  report_id: number;
  cadence: Cadence;
  time_of_day: string;
  weekday: number | null;
  month_day: number | null;
  time_zone: string;
  recipient_user_ids: number[];
  enabled: boolean;
  /** When it runs next; null once disabled (a disabled schedule never runs again). */
  next_run_at: string | null;
}

interface ScheduleRow {
  id: number;
  report_id: number;
  owner_user_id: number;
  cadence: Cadence;
  time_of_day: string;
  weekday: number | null;
  month_day: number | null;
  time_zone: string;
  recipient_user_ids: number[] | string;
  /** The owner's organisation when it was made (null: they had none); its runs stay in it. */
  organisation_id: number | null;
  enabled: boolean;
  next_run_at: Date;
}

/** The recipients' ids of a jsonb column (a driver may hand jsonb back as text). */
export const userIds = (value: number[] | string | null): number[] =>
  typeof value === 'string' ? (JSON.parse(value) as number[]) : (value ?? []);

const present = (row: ScheduleRow): ScheduleView => ({
  schedule_id: row.id,
  report_id: row.report_id,
  cadence: row.cadence,
  time_of_day: row.time_of_day,
  weekday: row.weekday,
  month_day: row.month_day,
  time_zone: row.time_zone,
  recipient_user_ids: userIds(row.recipient_user_ids),
  enabled: row.enabled,
  next_run_at: row.enabled ? new Date(row.next_run_at).toISOString() : null,
});

const specOf = (row: ScheduleRow): ScheduleSpec => ({
  cadence: row.cadence,
  timeOfDay: row.time_of_day,
  weekday: row.weekday ?? undefined,
  monthDay: row.month_day ?? undefined,
  timeZone: row.time_zone,
});

/** The owner's schedules. */
export async function listSchedules(knex: Knex, ownerUserId: number): Promise<ScheduleView[]> {
  return ((await knex('report_schedules').where({ owner_user_id: ownerUserId }).orderBy('id', 'desc').limit(200)) as ScheduleRow[]).map(
    present,
  );
}

export async function createSchedule(
  knex: Knex,
  input: { reportId: number; ownerUserId: number; organisationId: number | null; spec: ScheduleSpec; recipientUserIds: number[] },
  now: Date,
): Promise<ScheduleView> {
  const [row] = (await knex('report_schedules')
    .insert({
      report_id: input.reportId,
      owner_user_id: input.ownerUserId,
      organisation_id: input.organisationId,
      cadence: input.spec.cadence,
      time_of_day: input.spec.timeOfDay,
      weekday: input.spec.weekday ?? null,
      month_day: input.spec.monthDay ?? null,
      time_zone: input.spec.timeZone,
      recipient_user_ids: JSON.stringify(input.recipientUserIds),
      next_run_at: nextRunAfter(input.spec, now),
    })
    .returning('*')) as ScheduleRow[];
  return present(row!);
}

export async function disableSchedule(knex: Knex, ownerUserId: number, id: number): Promise<ScheduleView> {
  const [row] = (await knex('report_schedules')
    .where({ id: Math.min(id, 2_147_483_647), owner_user_id: ownerUserId })
    .update({ enabled: false })
    .returning('*')) as ScheduleRow[];
  if (!row) throw new ApiError('not_found', { param: 'schedule_id', humanMessage: 'You have no schedule with this id' });
  return present(row);
}

/**
 * Claims every due run: for each enabled schedule whose next run has come, one `schedule_runs`
 * row for that due time (a replica that lost the race inserts nothing) and the next run moved
 * on. Returns the run ids this call created, for the caller to queue.
 */
export async function claimDueRuns(knex: Knex, now: Date): Promise<number[]> {
  const due = (await knex('report_schedules').where({ enabled: true }).andWhere('next_run_at', '<=', now).limit(500)) as ScheduleRow[];
  const created: number[] = [];
  for (const schedule of due) {
    const [run] = (await knex('schedule_runs')
      .insert({ schedule_id: schedule.id, due_at: schedule.next_run_at, state: 'queued' })
      .onConflict(['schedule_id', 'due_at'])
      .ignore()
      .returning('id')) as { id: number }[];
    // Moved on only from the due time it saw, so a slower replica cannot skip a run.
    await knex('report_schedules')
      .where({ id: schedule.id, next_run_at: schedule.next_run_at })
      .update({ next_run_at: nextRunAfter(specOf(schedule), now) });
    if (run) created.push(run.id);
  }
  return created;
}

/**
 * Of `ids`, those who may receive a schedule's runs now: active people (not deleted) of the
 * organisation it was scheduled in — the owner alone when it was made without one.
 */
export async function activeRecipients(
  knex: Knex,
  ids: readonly number[],
  schedule: { organisation_id: number | null; owner_user_id: number },
): Promise<{ id: number; email: string }[]> {
  if (ids.length === 0) return [];
  return (await knex('users')
    .whereIn('id', [...new Set(ids)])
    .andWhere({ status: 'active' })
    .whereNull('deleted_at')
    .andWhere((w) =>
      schedule.organisation_id === null
        ? w.where({ id: schedule.owner_user_id, organisation_id: null })
        : w.where({ organisation_id: schedule.organisation_id }),
    )
    .orderBy('id')
    .select('id', 'email')) as { id: number; email: string }[];
}

/** The run with its schedule (for the run job), or undefined. */
export async function findRun(knex: Knex, runId: number) {
  const row = (await knex('schedule_runs as r')
    .join('report_schedules as s', 's.id', 'r.schedule_id')
    .where('r.id', runId)
    .first(
      'r.id',
      'r.state',
      'r.export_id',
      'r.due_at',
      'r.recipient_user_ids as sent_to',
      's.report_id',
      's.owner_user_id',
      's.organisation_id',
      's.recipient_user_ids',
    )) as
    | {
        id: number;
        state: string;
        export_id: string | null;
        due_at: Date;
        sent_to: number[] | string;
        report_id: number;
        owner_user_id: number;
        organisation_id: number | null;
        recipient_user_ids: number[] | string;
      }
    | undefined;
  if (!row) return undefined;
  return {
    ...row,
    /** Whom the schedule names. */
    recipient_user_ids: userIds(row.recipient_user_ids),
    /** Whom this run was actually sent to. */
    sent_to: userIds(row.sent_to),
  };
}

/**
 * Whether `userId` may see a run (and its file): the schedule's owner, or someone it was actually
 * sent to while they are still an active member of the organisation it was scheduled in.
 */
async function mayFollowRun(knex: Knex, userId: number, run: NonNullable<Awaited<ReturnType<typeof findRun>>>): Promise<boolean> {
  if (run.owner_user_id === userId) return true;
  if (!run.sent_to.includes(userId)) return false;
  return (await activeRecipients(knex, [userId], run)).length === 1;
}

/** Marks a run reviewed by its schedule's owner or one of the people it was sent to (still in the organisation). */
export async function reviewRun(knex: Knex, userId: number, runId: number, now: Date) {
  const run = runId <= 2_147_483_647 ? await findRun(knex, runId) : undefined;
  if (!run || !(await mayFollowRun(knex, userId, run)))
    throw new ApiError('not_found', { param: 'run_id', humanMessage: 'There is no scheduled run with this id among yours' });
  await knex('schedule_runs').where({ id: runId }).update({ reviewed_at: now, reviewed_by: userId });
  return { run_id: runId, state: run.state, reviewed_at: now.toISOString(), reviewed_by: userId };
}

/**
 * Whether `userId` may download an export: its owner, or someone the scheduled run that made it
 * was sent to, while still an active member of the organisation the schedule was made in.
 */
export async function mayDownloadExport(knex: Knex, userId: number, exportId: string): Promise<boolean> {
  const row = (await knex('report_exports').where({ id: exportId }).first('owner_user_id', 'schedule_run_id')) as
    { owner_user_id: number; schedule_run_id: number | null } | undefined;
  if (!row) return false;
  if (row.owner_user_id === userId) return true;
  if (row.schedule_run_id === null) return false;
  const run = await findRun(knex, row.schedule_run_id);
  return run !== undefined && run.export_id === exportId && (await mayFollowRun(knex, userId, run));
}
