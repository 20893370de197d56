// The quality explorer (docs/portal.md "Quality explorer"): a public, metadata-only view of how
// each model and supplier behaves across the platform.
//   GET  /dashboard/qualitative                      the snapshot (HTML)
//   GET  /dashboard/api/qualitative                  the same snapshot as JSON (one object renders both)
//   GET  /dashboard/qualitative/export               the same snapshot as CSV
//   GET  /dashboard/qualitative/detail/{request_id}  never available here: 403 with where to look
//   GET/POST /dashboard/qualitative/settings         platform admins: availability (public,
//                                                    signed_in, off) and the minimum requests per row
// Query: days (1–90, default 7).
import { Router, type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import { ApiError } from '../../../../core/errors/index.js';
import { helpPanels, isHelpHidden } from '../help/panels.js';
import type { PortalDeps } from '../../deps.js';
import { wantsJson } from '../../web/errors.js';
import { requireAction } from '../../web/principal.js';
import { parseBody, validate, wholeNumberParam } from '../../web/validation.js';
import { csvLine } from '../usage/csv.js';
import { QualitySnapshots } from './snapshot.js';

const settingsKey = 'quality_explorer';
const availabilities = ['public', 'signed_in', 'off'] as const;
interface QualitySettings {
  availability: (typeof availabilities)[number];
  min_requests: number;
}
const defaults: QualitySettings = { availability: 'public', min_requests: 5 };

const daysQuery = z.strictObject({
  days: wholeNumberParam(90, 'days').optional(),
});
const settingsBody = z.strictObject({
  availability: z.enum(availabilities, { message: 'must be public, signed_in or off' }),
  min_requests: z.union(
    [
      z.number().int().min(1).max(10_000),
      z
        .string()
        .regex(/^[1-9][0-9]{0,4}$/, 'must be 1 to 10000')
        .transform(Number)
        .refine((n) => n <= 10_000, 'must be 1 to 10000'),
    ],
    {
      message: 'must be a whole number from 1 to 10000',
    },
  ),
});

export function qualityRouter(deps: PortalDeps): Router {
  const router = Router();
  const snapshots = new QualitySnapshots(deps.database, deps.clock);

  const settings = async (): Promise<QualitySettings> => {
    const row = (await deps.database('portal_settings').where({ key: settingsKey }).first('value')) as
      { value: QualitySettings } | undefined;
    return { ...defaults, ...row?.value };
  };

  /** Applies the availability: off → 404 for everyone; signed_in → a session is needed. */
  const available = async (req: Request, res: Response, next: NextFunction) => {
    const current = await settings();
    if (current.availability === 'off')
      return next(new ApiError('not_found', { humanMessage: 'The quality explorer is turned off on this portal' }));
    if (current.availability === 'signed_in' && !req.user) {
      if (req.method === 'GET' && !wantsJson(req)) return res.redirect(303, `/login?return_to=${encodeURIComponent(req.originalUrl)}`);
      return next(new ApiError('invalid_session', { humanMessage: 'Sign in to see the quality explorer' }));
    }
    res.locals.quality = current;
    next();
  };

  const snapshotFor = (req: Request, res: Response) =>
    snapshots.get((req.valid!.query as { days?: number }).days ?? 7, (res.locals.quality as QualitySettings).min_requests);

  router.get('/dashboard/qualitative', validate({ query: daysQuery }), available, async (req, res) => {
    const snapshot = await snapshotFor(req, res);
    res.render('dashboard/quality/index', {
      title: 'Quality explorer',
      section: 'quality',
      snapshot,
      signedIn: Boolean(req.user),
      help: helpPanels.qualitative,
      helpHidden: await isHelpHidden(deps.database, req.user?.id, 'qualitative'),
    });
  });

  router.get('/dashboard/api/qualitative', validate({ query: daysQuery }), available, async (req, res) => {
    res.json(await snapshotFor(req, res));
  });

  router.get('/dashboard/qualitative/export', validate({ query: daysQuery }), available, async (req, res) => {
    const snapshot = await snapshotFor(req, res);
    res.set('content-type', 'text/csv; charset=utf-8');
    res.set('content-disposition', `attachment; filename="quality-${snapshot.days}d.csv"`);
    res.write(
      csvLine([
        'model',
        'supplier',
        'requests',
        'success_rate',
        'p50_latency_ms',
        'p95_latency_ms',
        'avg_input_tokens',
        'avg_output_tokens',
      ]),
    );
    for (const r of snapshot.rows)
      res.write(
        csvLine([
          r.model,
          r.supplier,
          r.requests,
          r.success_rate,
          r.p50_latency_ms,
          r.p95_latency_ms,
          r.avg_input_tokens,
          r.avg_output_tokens,
        ]),
      );
    res.end();
  });

  router.get('/dashboard/qualitative/detail/:request_id', () => {
    throw new ApiError('forbidden', {
      humanMessage:
        'Per-request detail is not available in the public quality explorer, which shows aggregates only; your own requests are in /dashboard/request-log',
    });
  });

  const admin = requireAction('admin.platform.manage');
  router.get('/dashboard/qualitative/settings', admin, async (req, res) => {
    const current = await settings();
    if (wantsJson(req)) return res.json(current);
    res.render('dashboard/quality/settings', {
      title: 'Quality explorer settings',
      section: 'quality',
      current,
      availabilities,
      saved: req.query.saved === '1',
    });
  });
  router.post('/dashboard/qualitative/settings', admin, async (req, res) => {
    const body = parseBody(settingsBody, req.body);
    const value: QualitySettings = { availability: body.availability, min_requests: body.min_requests };
    await deps
      .database('portal_settings')
      .insert({ key: settingsKey, value: JSON.stringify(value), updated_by: req.user!.id, updated_at: new Date(deps.clock()) })
      .onConflict('key')
      .merge();
    if (wantsJson(req)) return res.json(value);
    res.redirect(303, '/dashboard/qualitative/settings?saved=1');
  });

  return router;
}
