// Dates as people write them. JavaScript's Date.parse rolls an impossible day over into the next
// month (2026-02-30 is read as 2026-03-02), so a query for a window nobody asked for would be
// answered; every date a user or client sends is checked here first.

/**
 * Whether the `YYYY-MM-DD` a text starts with names a day that exists (month 1–12, day within
 * that month, leap years included). Text without that prefix is left to the caller's own format
 * check (true).
 */
export function namesRealDay(text: string): boolean {
  const match = /^([+-]?\d{4,6})-(\d{2})-(\d{2})/.exec(text);
  if (!match) return true;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (month < 1 || month > 12 || day < 1) return false;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/** Whether JavaScript reads `text` as a date or date-time, and the day it names exists. */
export function isRealDate(text: string): boolean {
  return !Number.isNaN(Date.parse(text)) && namesRealDay(text);
}

/** An ISO date (2026-11-01) or time (2026-11-01T08:00, seconds, milliseconds and a zone optional), four-digit year. */
const isoDateOrTime = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/;

/**
 * Whether `text` is an ISO date or date-time as people and forms send them, naming a day that
 * exists, in years 0000–9999 (what the form's date input and PostgreSQL's dates agree on).
 */
export function isIsoDateOrTime(text: string): boolean {
  return isoDateOrTime.test(text) && isRealDate(text);
}

/**
 * The instant an `isIsoDateOrTime` text names, read as the portal's forms mean it: a time without
 * a zone is UTC, and a bare date is that day's start (00:00 UTC).
 */
export function isoInstant(text: string): Date {
  return new Date(/[Zz]|[+-]\d{2}:\d{2}$/.test(text) || !text.includes('T') ? text : `${text}Z`);
}

/**
 * Whether `text` is exactly the instant form this platform writes (`Date.prototype.toISOString`:
 * 2026-11-01T08:00:00.000Z) and reads back to itself. Cursors carry timestamps in this form, so a
 * cursor is read only if it could have been written: anything else JavaScript happens to parse
 * ("1", "2026-02-30") but PostgreSQL reads differently or refuses is turned away before the query.
 */
export function isCanonicalInstant(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(text)) return false;
  const time = Date.parse(text);
  return Number.isFinite(time) && new Date(time).toISOString() === text && text >= '0001';
}
