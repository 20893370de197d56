// Out-of-process control: `/_sim/faults` and `/_sim/requests`, for a simulator started by
// `npm run sim` that a benchmark or demo wants to steer.
import { asObject, type Exchange, sendError, sendJson } from './http.js';
import type { RecordedRequest, SimulatorFaults } from './types.js';

/** What the admin endpoints may read and change. */
export interface AdminTarget {
  getFaults(): SimulatorFaults | undefined;
  setFaults(f: SimulatorFaults | undefined): void;
  readonly requests: RecordedRequest[];
}

/** Handles `/_sim/*`; `body` is the parsed JSON body (undefined for GET/DELETE). */
export function handleAdmin(target: AdminTarget, ex: Exchange, method: string, path: string, body: unknown): void {
  if (path === '/_sim/faults') {
    if (method === 'GET') return sendJson(ex, 200, { faults: target.getFaults() ?? null });
    if (method === 'DELETE') {
      target.setFaults(undefined);
      return sendJson(ex, 200, { faults: null });
    }
    if (method === 'POST' || method === 'PUT') {
      const faults = validateFaults(body);
      if (typeof faults === 'string') return sendError(ex, 400, faults);
      target.setFaults(faults);
      return sendJson(ex, 200, { faults });
    }
  }
  if (path === '/_sim/requests') {
    if (method === 'GET') return sendJson(ex, 200, { requests: target.requests });
    if (method === 'DELETE') {
      target.requests.length = 0;
      return sendJson(ex, 200, { requests: [] });
    }
  }
  sendError(ex, 404, `Invalid URL (${method} ${path})`);
}

const STATUSES = new Set([429, 500, 502, 503, 529]);

/** Checks a SimulatorFaults JSON value; returns an error message when it is not one. */
export function validateFaults(value: unknown): SimulatorFaults | string {
  const obj = asObject(value);
  if (!obj) return 'faults must be a JSON object';
  const out: SimulatorFaults = {};
  for (const [key, v] of Object.entries(obj)) {
    if (v === undefined || v === null) continue;
    switch (key) {
      case 'latencyMs':
      case 'retryAfterSeconds':
      case 'cutAfterEvents':
      case 'failFirst':
        if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) return `${key} must be a non-negative integer`;
        out[key] = v;
        break;
      case 'status':
        if (typeof v !== 'number' || !STATUSES.has(v)) return 'status must be one of 429, 500, 502, 503, 529';
        out.status = v as SimulatorFaults['status'];
        break;
      case 'hang':
        if (typeof v !== 'boolean') return 'hang must be a boolean';
        out.hang = v;
        break;
      default:
        return `unknown fault '${key}'`;
    }
  }
  return out;
}
