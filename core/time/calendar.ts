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
