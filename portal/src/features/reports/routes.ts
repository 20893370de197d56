// Saved reports and export jobs (docs/reports.md):
//   GET  /dashboard/reports                              hub: the caller's reports and the create form
//   POST /dashboard/reports                              {name, kind, days?, group_by?, model?, key_id?, status?}
//   POST /dashboard/reports/{report_id}/rename           {name}
//   POST /dashboard/reports/{report_id}/delete
//   GET  /dashboard/reports/{report_id}/open             → its view
//   GET  /dashboard/reports/{report_id}/view             HTML: chart or table, exports
//   GET  /dashboard/reports/{report_id}/export           the CSV, streamed now
//   GET  /dashboard/api/reports/{report_id}              JSON: the report and its rows (first 1,000)
//   POST /dashboard/reports/{report_id}/exports          a background export job → 202 {job}
//   GET  /dashboard/reports/exports/{job_id}             its state and progress (HTML polls, or JSON)
//   POST /dashboard/reports/exports/{job_id}/cancel
//   GET  /dashboard/reports/exports/{job_id}/download    the file (its owner or a scheduled run's recipients, until it expires)
//   POST /dashboard/reports/schedules                    {report_id, cadence, time, time_zone, weekday?, month_day?, recipients}
//   POST /dashboard/reports/schedules/{schedule_id}/disable
//   GET  /dashboard/reports/schedule-runs                the runs of schedules the caller owns or receives
//   POST /dashboard/reports/schedule-runs/{run_id}/review
// Everything is the caller's own: another user's report or job is 404, as one that does not exist.
// No page here takes a query parameter: one is 422 (noQuery), never ignored.
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import {
  cancelExport,
  createExport,
  createReport,
  csvLine,
  deleteReport,
  exportDownload,
  findExport,
  findReport,
  listExports,
  cadences,
  cellText,
  filtersNotApplied,
  createSchedule,
  disableSchedule,
  isTimeZone,
  listReports,
  listRuns,
  listSchedules,
  mayDownloadExport,
  reviewRun,
  renameReport,
  reportDefinition,
  reportGroupings,
  reportKinds,
  runReport,
  type SavedReport,
} from '../../../../core/reports/index.js';
import { ApiError } from '../../../../core/errors/index.js';
import type { PortalDeps } from '../../deps.js';
import { exportQueue, ownerScope } from '../../jobs.js';
import { keysInScope } from '../../../../core/usage/index.js';
import { wantsJson } from '../../web/errors.js';
import { writeOrGone } from '../../web/backpressure.js';
import { applyPathParamRules } from '../../web/path-params.js';
import { requireAction } from '../../web/principal.js';
import { maxRowId, noQuery, parseBody, validationError } from '../../web/validation.js';
import { withFormPage, type FormIssue } from '../../web/form-issues.js';
import { emailAddress } from '../../../../core/identity/email.js';
import { FormClaims, newFormToken, sentFormToken, withoutFormToken } from '../../web/form-claims.js';

const name = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
/** A whole number from a form field or JSON. */
const whole = (min: number, max: number) =>
  z
    .union([
      z.number(),
      z
        .string()
        .trim()
        .regex(/^\d{1,10}$/, 'must be a whole number')
        .transform(Number),
    ])
    .pipe(z.number().int().min(min).max(max));
/** An optional whole number: left out, or a form's field left empty (forms send every field), is none. */
const optionalWhole = (min: number, max: number) => z.union([whole(min, max), z.literal('').transform(() => undefined)]).optional();
const optionalText = (max: number) =>
  z
    .string()
    .trim()
    .max(max)
    .optional()
    .transform((v) => (v ? v : undefined));
const createBody = z.strictObject({
  name,
  kind: z.enum(reportKinds, { message: `must be one of ${reportKinds.join(', ')}` }),
  days: optionalWhole(1, 366),
  group_by: z.enum(reportGroupings, { message: `must be one of ${reportGroupings.join(', ')}` }).optional(),
  model: optionalText(200),
  key_id: optionalWhole(1, maxRowId),
  status: optionalWhole(2, 599),
});
const renameBody = z.strictObject({ name });
/** The day field each cadence uses besides time and time zone (daily: none). */
const cadenceDayField = { daily: undefined, weekly: 'weekday', monthly: 'month_day' } as const;
const dayFields = ['weekday', 'month_day'] as const;
const dayFieldNeeds = { weekday: 'a weekday (0 = Sunday)', month_day: 'a month_day (1–28)' } as const;
const scheduleBody = z
  .strictObject({
    report_id: whole(1, 2_147_483_647),
    cadence: z.enum(cadences, { message: `must be one of ${cadences.join(', ')}` }),
    time: z
      .string()
      .trim()
      .regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time HH:MM (24-hour)'),
    time_zone: z.string().trim().max(64).refine(isTimeZone, 'must be an IANA time zone such as Europe/Paris or UTC'),
    weekday: optionalWhole(0, 6),
    month_day: optionalWhole(1, 28),
    /** Addresses of people in the owner's organisation: a list, or text separated by commas. */
    recipients: z
      .union([z.array(z.string()), z.string().transform((v) => v.split(','))])
      .transform((list) => list.map((e) => e.trim().toLowerCase()).filter(Boolean))
      .pipe(z.array(emailAddress).min(1, 'name at least one recipient').max(50)),
  })
  // The cadence's day field is needed; the other is refused, never stored to look as if it
  // counted (a weekday on a daily schedule). Empty is left out: the form sends every field.
  .superRefine((b, ctx) => {
    for (const field of dayFields) {
      const used = cadenceDayField[b.cadence] === field;
      if (used && b[field] === undefined)
        ctx.addIssue({ code: 'custom', path: [field], message: `a ${b.cadence} schedule needs ${dayFieldNeeds[field]}` });
      if (!used && b[field] !== undefined)
        ctx.addIssue({ code: 'custom', path: [field], message: `a ${b.cadence} schedule does not use ${field}` });
    }
  });

/** Rows a page or the JSON projection shows at most (exports have no limit). */
const shownRows = 1_000;

export function reportsRouter(deps: PortalDeps): Router {
  const router = Router();
  applyPathParamRules(router);
  const knex = deps.database;
  const now = () => new Date(deps.clock());
  const guard = requireAction('reports.manage');
  const report = (req: Request) => findReport(knex, req.user!.id, Number(req.params.report_id));
  // The hub's forms carry a one-use form_token, as the new-key form does: sent twice (a double
  // click, a reload) they make one report or one schedule — a second schedule would email twice.
  const reportForms = new FormClaims(deps.store, deps.logger, 'report-form');
  const scheduleForms = new FormClaims(deps.store, deps.logger, 'schedule-form');
  // So does the report page's "Export in the background": two clicks, one export job.
  const exportForms = new FormClaims(deps.store, deps.logger, 'export-form');

  /** The first rows of a run, for the page and the JSON projection. */
  const preview = async (saved: SavedReport) => {
    const run = runReport(knex, saved, await ownerScope(knex, saved.owner_user_id), now());
    const rows: unknown[][] = [];
    for await (const cells of run.rows()) {
      if (rows.length === shownRows) break;
      rows.push(cells);
    }
    return { header: run.header, rows, total: await run.total(), from: run.from.toISOString(), to: run.to.toISOString() };
  };

  /** The hub (JSON: the lists); after a refused form, again with that form's issues and what was typed (`form`). */
  const showHub = async (
    req: Request,
    res: Response,
    status = 200,
    form: { which: 'report' | 'schedule'; issues: FormIssue[]; values: Record<string, unknown> } | undefined = undefined,
  ) => {
    const [reports, schedules] = await Promise.all([listReports(knex, req.user!.id), listSchedules(knex, req.user!.id)]);
    if (wantsJson(req)) return void res.json({ object: 'list', data: reports, schedules });
    res.status(status).render('dashboard/reports/index', {
      title: 'Reports',
      section: 'reports',
      reports,
      schedules,
      kinds: reportKinds,
      groupings: reportGroupings,
      cadences,
      myEmail: ((await knex('users').where({ id: req.user!.id }).first('email')) as { email: string }).email,
      form,
      reportFormToken: newFormToken(),
      scheduleFormToken: newFormToken(),
    });
  };

  router.get('/dashboard/reports', guard, noQuery, (req, res) => showHub(req, res));

  router.post('/dashboard/reports/schedules', guard, (req, res) =>
    withFormPage(
      req,
      res,
      () => createScheduleFrom(req, res),
      (status, form) => showHub(req, res, status, { which: 'schedule', ...form }),
    ),
  );

  const createScheduleFrom = async (req: Request, res: Response) => {
    const formToken = sentFormToken(req);
    const body = parseBody(scheduleBody, withoutFormToken(req.body));
    const owner = req.user!;
    await findReport(knex, owner.id, body.report_id);
    // Recipients: active people of the owner's organisation (the owner alone without one).
    const found = (await knex('users')
      .whereRaw(`lower(email) in (${body.recipients.map(() => '?').join(', ')})`, body.recipients)
      .andWhere({ status: 'active' })
      .whereNull('deleted_at')
      .andWhere((w) => (owner.organisationId === null ? w.where({ id: owner.id }) : w.where({ organisation_id: owner.organisationId })))
      .select('id', 'email')) as { id: number; email: string }[];
    const missing = body.recipients.filter((e) => !found.some((u) => u.email.toLowerCase() === e));
    if (missing.length > 0)
      throw new ApiError('validation_error', {
        status: 422,
        param: 'recipients',
        humanMessage: `Not an active member of your organisation: ${missing.join(', ')} (scheduled reports go to colleagues only)`,
      });
    const made = await scheduleForms.makeOnce(owner.id, formToken, async () => {
      const schedule = await createSchedule(
        knex,
        {
          reportId: body.report_id,
          ownerUserId: owner.id,
          organisationId: owner.organisationId,
          spec: { cadence: body.cadence, timeOfDay: body.time, weekday: body.weekday, monthDay: body.month_day, timeZone: body.time_zone },
          recipientUserIds: found.map((u) => u.id),
        },
        now(),
      );
      return { record: { number: schedule.schedule_id }, schedule };
    });
    // Sent before: the hub, which lists the schedule the first one made, not a second one.
    if ('already' in made) return void res.redirect(303, '/dashboard/reports');
    const { schedule } = made.made;
    if (wantsJson(req)) return void res.status(201).json({ schedule });
    res.redirect(303, '/dashboard/reports');
  };

  router.post('/dashboard/reports/schedules/:schedule_id/disable', guard, async (req, res) => {
    const schedule = await disableSchedule(knex, req.user!.id, Number(req.params.schedule_id));
    if (wantsJson(req)) return res.json({ schedule });
    res.redirect(303, '/dashboard/reports');
  });

  router.get('/dashboard/reports/schedule-runs', guard, noQuery, async (req, res) => {
    const runs = await listRuns(knex, req.user!.id, now());
    if (wantsJson(req)) return res.json({ object: 'list', data: runs });
    res.render('dashboard/reports/runs', { title: 'Scheduled runs', section: 'reports', runs });
  });

  router.post('/dashboard/reports/schedule-runs/:run_id/review', guard, async (req, res) => {
    const reviewed = await reviewRun(knex, req.user!.id, Number(req.params.run_id), now());
    if (wantsJson(req)) return res.json({ run: reviewed });
    res.redirect(303, '/dashboard/reports/schedule-runs');
  });

  router.post('/dashboard/reports', guard, (req, res) =>
    withFormPage(
      req,
      res,
      () => createReportFrom(req, res),
      (status, form) => showHub(req, res, status, { which: 'report', ...form }),
    ),
  );

  const createReportFrom = async (req: Request, res: Response) => {
    const formToken = sentFormToken(req);
    const body = parseBody(createBody, withoutFormToken(req.body), req.body);
    const given = {
      ...(body.days !== undefined && { days: body.days }),
      ...(body.group_by !== undefined && { group_by: body.group_by }),
      ...(body.model !== undefined && { model: body.model }),
      ...(body.key_id !== undefined && { key_id: body.key_id }),
      ...(body.status !== undefined && { status: body.status }),
    };
    const definition = parseBody(reportDefinition, given);
    const ignored = filtersNotApplied(body.kind, given);
    if (ignored.length > 0) {
      const other = body.kind === 'usage' ? 'request_log' : 'usage';
      throw validationError(ignored.map((name) => ({ loc: ['body', name], msg: `applies to ${other} reports only`, type: 'value_error' })));
    }
    // A key filter names one of the keys the report's owner may see: another's would save a report
    // that always shows nothing, and its 404-or-not would tell which key numbers exist.
    if (body.key_id !== undefined) {
      const mine = await keysInScope(knex, await ownerScope(knex, req.user!.id))
        .where({ number: body.key_id })
        .first('id');
      if (!mine) throw validationError([{ loc: ['body', 'key_id'], msg: 'is not one of the keys you can see', type: 'value_error' }]);
    }
    const made = await reportForms.makeOnce(req.user!.id, formToken, async () => {
      const saved = await createReport(knex, { ownerUserId: req.user!.id, name: body.name, kind: body.kind, definition });
      return { record: { number: saved.id }, saved };
    });
    // Sent before: the report the first one made, not a second one.
    if ('already' in made) return void res.redirect(303, `/dashboard/reports/${made.already}/view`);
    const { saved } = made.made;
    if (wantsJson(req)) return void res.status(201).json({ report: saved });
    res.redirect(303, `/dashboard/reports/${saved.id}/view`);
  };

  // Export jobs first: their paths would otherwise read "exports" as a report id.
  router.get('/dashboard/reports/exports/:job_id', guard, noQuery, async (req, res) => {
    const job = await findExport(knex, req.user!.id, req.params.job_id as string, now());
    if (wantsJson(req)) return res.json({ job });
    const saved = await findReport(knex, req.user!.id, job.report_id);
    res.render('dashboard/reports/export', { title: `Export of ${saved.name}`, section: 'reports', job, report: saved });
  });

  router.post('/dashboard/reports/exports/:job_id/cancel', guard, async (req, res) => {
    const job = await cancelExport(knex, req.user!.id, req.params.job_id as string, now());
    if (wantsJson(req)) return res.json({ job });
    res.redirect(303, `/dashboard/reports/exports/${job.job_id}`);
  });

  router.get('/dashboard/reports/exports/:job_id/download', guard, noQuery, async (req, res) => {
    const { stream, bytes, job } = await exportDownload(knex, req.user!.id, req.params.job_id as string, now(), (user, id) =>
      mayDownloadExport(knex, user, id),
    );
    const saved = (await knex('saved_reports').where({ id: job.report_id }).first('name')) as { name: string };
    const suffix = `-${job.job_id.slice(0, 8)}.csv`;
    // An ASCII name for old clients, and the report's own name (RFC 6266 filename*) for the rest: "Über café 日本".
    const ascii = `${saved.name.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 80) || 'report'}${suffix}`;
    const named = encodeURIComponent(`${saved.name.slice(0, 80)}${suffix}`);
    res.set({
      'content-type': 'text/csv; charset=utf-8',
      'content-length': String(bytes),
      'content-disposition': `attachment; filename="${ascii}"; filename*=UTF-8''${named}`,
      'cache-control': 'private, no-store',
    });
    stream.pipe(res);
  });

  router.post('/dashboard/reports/:report_id/rename', guard, async (req, res) => {
    const { name: newName } = parseBody(renameBody, req.body);
    const saved = await renameReport(knex, req.user!.id, Number(req.params.report_id), newName);
    if (wantsJson(req)) return res.json({ report: saved });
    res.redirect(303, `/dashboard/reports/${saved.id}/view`);
  });

  router.post('/dashboard/reports/:report_id/delete', guard, async (req, res) => {
    // Its exports and their stored CSV go with it.
    await deleteReport(knex, req.user!.id, Number(req.params.report_id));
    if (wantsJson(req)) return res.json({ ok: true, deleted: Number(req.params.report_id) });
    res.redirect(303, '/dashboard/reports');
  });

  router.get('/dashboard/reports/:report_id/open', guard, noQuery, async (req, res) => {
    const saved = await report(req);
    res.redirect(303, `/dashboard/reports/${saved.id}/view`);
  });

  router.get('/dashboard/reports/:report_id/view', guard, noQuery, async (req, res) => {
    const saved = await report(req);
    const [shown, exports] = await Promise.all([preview(saved), listExports(knex, req.user!.id, saved.id, now())]);
    if (wantsJson(req)) return res.json({ report: saved, ...shown, exports });
    res.render('dashboard/reports/view', {
      title: saved.name,
      section: 'reports',
      report: saved,
      ...shown,
      exports,
      chartData: JSON.stringify(chartOf(saved, shown.header, shown.rows)).replace(/</g, '\\u003c'),
      cellText,
      exportFormToken: newFormToken(),
    });
  });

  router.get('/dashboard/api/reports/:report_id', guard, noQuery, async (req, res) => {
    const saved = await report(req);
    const shown = await preview(saved);
    res.json({ report: saved, ...shown, truncated: shown.total > shown.rows.length });
  });

  // The CSV now, streamed page by page (the export job is for large or watched exports).
  router.get('/dashboard/reports/:report_id/export', guard, noQuery, async (req, res) => {
    const saved = await report(req);
    const run = runReport(knex, saved, await ownerScope(knex, saved.owner_user_id), now());
    res.set({
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="report-${saved.id}.csv"`,
      'cache-control': 'private, no-store',
    });
    // With back-pressure; a client that leaves stops the rows being read.
    if (!(await writeOrGone(res, csvLine(run.header)))) return;
    for await (const cells of run.rows()) if (!(await writeOrGone(res, csvLine(cells)))) return;
    res.end();
  });

  router.post('/dashboard/reports/:report_id/exports', guard, async (req, res) => {
    const saved = await report(req);
    const made = await exportForms.makeOnce(req.user!.id, sentFormToken(req), async () => {
      const exportId = await createExport(knex, saved);
      await deps.jobs.send(exportQueue, { exportId });
      return { record: { number: exportId } };
    });
    // Sent before: the export the first one started, not a second one.
    const id = 'made' in made ? made.made.record.number : made.already;
    const job = await findExport(knex, req.user!.id, id, now());
    if (wantsJson(req)) return res.status(202).json({ job });
    res.redirect(303, `/dashboard/reports/exports/${id}`);
  });

  return router;
}

/** The view's chart: cost per day (per group when grouped), from the rows shown. */
function chartOf(saved: SavedReport, header: string[], rows: unknown[][]) {
  if (saved.kind !== 'usage') return null;
  const days = [...new Set(rows.map((r) => String(r[0])))].sort();
  const groups = [...new Set(rows.map((r) => String(r[1])))];
  const cost = header.indexOf('cost_usd');
  return {
    labels: days,
    series: groups.slice(0, 8).map((g) => ({
      label: g,
      data: days.map((d) => rows.filter((r) => String(r[0]) === d && String(r[1]) === g).reduce((s, r) => s + Number(r[cost]), 0)),
    })),
  };
}
