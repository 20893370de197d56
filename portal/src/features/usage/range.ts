// The time range of usage and request-log queries: `from`/`to` as ISO dates (2026-11-01) or
// instants (2026-11-01T08:00:00Z), aligned to the granularity, defaulting to the last 30 days by
// day or the last 48 hours by hour, and never wider than the report may hold.
import { ApiError } from '../../../../core/errors/index.js';
import { isIsoDateOrTime, isoInstant } from '../../../../core/time/index.js';
import { maxBins, type Granularity } from '../../../../core/usage/index.js';
import { validationError } from '../../web/validation.js';

const stepMs: Record<Granularity, number> = { hour: 3_600_000, day: 86_400_000 };

/** Parses an ISO date or instant; undefined when absent, a 422 naming `name` when malformed. */
export function parseInstant(name: string, value: string | undefined): Date | undefined {
  if (value === undefined || value === '') return undefined;
  if (!isIsoDateOrTime(value))
    throw validationError([
      { loc: ['query', name], msg: 'must be an ISO date (2026-11-01) or time (2026-11-01T08:00:00Z)', type: 'value_error' },
    ]);
  return isoInstant(value);
}

/** A range whose start is not before its end: the usage and request-log filters' one answer. */
export function rangeOutOfOrder(): ApiError {
  return new ApiError('validation_error', { status: 422, humanMessage: 'The range must start (from) before it ends (to)', param: 'from' });
}

/** The aligned [from, to) of a usage report. */
export function usageRange(granularity: Granularity, fromText: string | undefined, toText: string | undefined, now: Date) {
  const step = stepMs[granularity];
  const given = { from: parseInstant('from', fromText), to: parseInstant('to', toText) };
  // `to` is exclusive; a bare date means that whole day is included. Now's bin is included.
  const dayAfter = given.to && toText && !toText.includes('T') ? 86_400_000 : 0;
  const toInstant = given.to ? given.to.getTime() + dayAfter : now.getTime() + 1;
  const to = new Date(Math.ceil(toInstant / step) * step);
  const defaultFrom = to.getTime() - (granularity === 'day' ? 30 : 48) * step;
  const from = new Date(Math.floor((given.from?.getTime() ?? defaultFrom) / step) * step);
  if (from >= to) throw rangeOutOfOrder();
  if ((to.getTime() - from.getTime()) / step > maxBins)
    throw new ApiError('validation_error', {
      status: 422,
      humanMessage: `The range holds more than ${maxBins} ${granularity}s; choose a shorter range${granularity === 'hour' ? ' or granularity=day' : ''}`,
      param: 'from',
    });
  return { from, to };
}
