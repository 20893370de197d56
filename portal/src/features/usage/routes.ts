// Usage for the dashboard (docs/portal.md "Dashboard: usage"), scoped like the key list:
//   GET /dashboard/api/usage      JSON bins: requests, errors, tokens, cost per hour or day,
//                                 optionally split by model, key or supplier
//   GET /dashboard/usage          the same as charts and a table (HTML; the table works without script)
//   GET /dashboard/usage/export   the same numbers as CSV
// Query: from, to (ISO dates or times), granularity (day | hour), split_by (model | key | supplier).
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { usageReport, type Granularity, type UsageReport, type UsageSplit } from '../../../../core/usage/index.js';
import type { PortalDeps } from '../../deps.js';
import { refusedFiltersPage, type FormIssue } from '../../web/form-issues.js';
import { requireAction } from '../../web/principal.js';
import { singleString, validate } from '../../web/validation.js';
import { viewScope } from '../keys/scope.js';
import { csvLine } from './csv.js';
import { usageRange } from './range.js';

const usageQuery = z.strictObject({
  from: singleString(40).optional(),
  to: singleString(40).optional(),
  granularity: z.enum(['day', 'hour'], { message: 'must be day or hour' }).optional(),
  split_by: z.enum(['model', 'key', 'supplier'], { message: 'must be model, key or supplier' }).optional(),
});
type UsageParams = z.infer<typeof usageQuery>;

export function usageRouter(deps: PortalDeps): Router {
  const router = Router();
  const guard = requireAction('usage.view');

  const report = (req: Request, q = req.valid!.query as UsageParams): Promise<UsageReport> => {
    const granularity: Granularity = q.granularity ?? 'day';
    const { from, to } = usageRange(granularity, q.from, q.to, new Date(deps.clock()));
    return usageReport(deps.database, {
      scope: viewScope(req),
      from,
      to,
      granularity,
      split: q.split_by as UsageSplit | undefined,
    });
  };

  router.get('/dashboard/api/usage', guard, validate({ query: usageQuery }), async (req, res) => {
    res.json(await report(req));
  });

  /** The page for a report; `refused`: the filters as typed and what is wrong with them (the report is the default one). */
  const showPage = (
    res: Response,
    data: UsageReport,
    q: UsageParams,
    refused?: { status: number; issues: FormIssue[]; typed: unknown },
  ) => {
    const params = new URLSearchParams({
      from: data.from.slice(0, data.granularity === 'day' ? 10 : 16),
      to: data.to.slice(0, data.granularity === 'day' ? 10 : 16),
      granularity: data.granularity,
      ...(q.split_by && { split_by: q.split_by }),
    });
    res.status(refused?.status ?? 200).render('dashboard/usage/index', {
      title: 'Usage',
      section: 'usage',
      report: data,
      query: q,
      issues: refused?.issues ?? [],
      typedQuery: refused?.typed,
      exportHref: `/dashboard/usage/export?${params.toString()}`,
      // Only the numbers the chart script needs, as JSON in a data block (no inline script: CSP).
      chartData: JSON.stringify({
        labels: data.bins.map((b) => (data.granularity === 'day' ? b.start.slice(0, 10) : b.start.slice(5, 16).replace('T', ' '))),
        requests: data.bins.map((b) => b.requests),
        cost: data.bins.map((b) => b.cost_usd),
        tokens: data.bins.map((b) => b.input_tokens + b.output_tokens),
        groups: data.groups.slice(0, 8).map((g) => ({ label: g.label, cost: data.bins.map((b) => b.groups?.[g.id]?.cost_usd ?? 0) })),
      }).replace(/</g, '\\u003c'),
    });
  };

  router.get(
    '/dashboard/usage',
    guard,
    validate({ query: usageQuery }),
    async (req: Request, res: Response) => showPage(res, await report(req), req.valid!.query as UsageParams),
    refusedFiltersPage(async (req, res, status, issues) => showPage(res, await report(req, {}), {}, { status, issues, typed: req.query })),
  );

  router.get('/dashboard/usage/export', guard, validate({ query: usageQuery }), async (req, res) => {
    const data = await report(req);
    res.set('content-type', 'text/csv; charset=utf-8');
    res.set('content-disposition', `attachment; filename="usage-${data.from.slice(0, 10)}-${data.to.slice(0, 10)}.csv"`);
    const header = ['start', ...(data.split ? [data.split] : []), 'requests', 'errors', 'input_tokens', 'output_tokens', 'cost_usd'];
    res.write(csvLine(header));
    const label = new Map(data.groups.map((g) => [g.id, g.label]));
    for (const bin of data.bins) {
      if (data.split) {
        for (const [id, t] of Object.entries(bin.groups ?? {}))
          res.write(
            csvLine([bin.start, label.get(id) ?? id, t.requests, t.errors, t.input_tokens, t.output_tokens, t.cost_usd.toFixed(9)]),
          );
      } else res.write(csvLine([bin.start, bin.requests, bin.errors, bin.input_tokens, bin.output_tokens, bin.cost_usd.toFixed(9)]));
    }
    res.end();
  });

  return router;
}
