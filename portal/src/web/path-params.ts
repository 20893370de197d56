// The seed's path-parameter rule in one place: ids named `*_id` are positive integers, except
// job_id, pm_id, operation_id and model_id (strings); tokens are strings. Routers that declare
// such parameters call applyPathParamRules so a bad one is a 422 before any handler runs.
import type { Router } from 'express';
import { z } from 'zod';
import { integerId, sequenceId, validationError } from './validation.js';

/** Parameters that are strings despite the `_id` suffix. */
const stringIds = new Set(['job_id', 'pm_id', 'operation_id', 'model_id']);

/** The integer `*_id` parameters the portal's routes use. */
export const integerParamNames = [
  'key_id',
  'user_id',
  'org_id',
  'department_id',
  'invite_id',
  'report_id',
  'schedule_id',
  'run_id',
  'budget_id',
  'alert_id',
  'promotion_id',
  'grant_id',
  'provider_id',
  'price_id',
  'conversation_id',
  'project_id',
  'request_id',
  'payment_id',
  'token_id',
].filter((name) => !stringIds.has(name));

const tokenParam = z.string().min(1).max(200, 'must be at most 200 characters');

/** Installs the checks on `router` (param callbacks are per router in Express). */
export function applyPathParamRules(router: Router): void {
  for (const name of integerParamNames) {
    // The request log's ids are the audit log's bigint sequence; every other id is a row's integer id.
    const rule = name === 'request_id' ? sequenceId : integerId;
    router.param(name, (_req, _res, next, value: string) => {
      const result = rule.safeParse(value);
      next(
        result.success
          ? undefined
          : validationError([
              { loc: ['path', name], msg: result.error.issues[0]?.message ?? 'must be a positive integer', type: 'int_parsing' },
            ]),
      );
    });
  }
  router.param('token', (_req, _res, next, value: string) => {
    next(
      tokenParam.safeParse(value).success
        ? undefined
        : validationError([{ loc: ['path', 'token'], msg: 'must be at most 200 characters', type: 'too_big' }]),
    );
  });
}
