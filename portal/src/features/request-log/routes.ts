// The request log (docs/portal.md "Dashboard: request log"), scoped like the key list:
//   GET /dashboard/request-log                 filters key_id, model, supplier, status (200, or 2/4/5
//                                              for a class), code, from, to; cursor pagination (HTML/JSON)
//   GET /dashboard/request-log/export          the filtered rows as CSV, streamed page by page
//   GET /dashboard/request-log/{request_id}    one request with its attempts; outside the scope → 404
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { ApiError } from '../../../../core/errors/index.js';
import {
  eachRequest,
  findRequest,
  InvalidLogCursorError,
  listRequests,
  requestLogCsvCells,
  requestLogCsvHeader,
  type RequestLogFilters,
} from '../../../../core/usage/index.js';
import type { PortalDeps } from '../../deps.js';
import { wantsJson } from '../../web/errors.js';
import { refusedFiltersPage, typedValue, type FormIssue } from '../../web/form-issues.js';
import { applyPathParamRules } from '../../web/path-params.js';
import { requireAction } from '../../web/principal.js';
import { rowIdText, sequenceId, singleString, validate, validationError, wholeNumberParam } from '../../web/validation.js';
import { viewScope } from '../keys/scope.js';
import { csvLine } from '../usage/csv.js';
import { parseInstant, rangeOutOfOrder } from '../usage/range.js';
import { writeOrGone } from '../../web/backpressure.js';

const text = (max: number) =>
  singleString(max)
    .regex(/^[\w.:/@-]+$/, 'must be a name as shown in the log')
    .optional();
const filterQuery = z.strictObject({
  key_id: singleString(10).pipe(rowIdText('must be a key id')).optional(),
  model: text(200),
  supplier: text(200),
  status: singleString(3)
    .regex(/^([245]|[1-5][0-9]{2})$/, 'must be an HTTP status (404) or a class (2, 4 or 5)')
    .transform(Number)
    .optional(),
  code: text(100),
  from: singleString(40).optional(),
  to: singleString(40).optional(),
});
const pageQuery = filterQuery.extend({
  cursor: singleString(500).optional(),
  limit: wholeNumberParam(200).optional(),
});

/** The filters of a validated query (dates parsed: a bare `to` date includes that day). */
function filtersOf(q: z.infer<typeof filterQuery>): RequestLogFilters {
  const from = parseInstant('from', q.from);
  let to = parseInstant('to', q.to);
  if (to && q.to && !q.to.includes('T')) to = new Date(to.getTime() + 86_400_000);
  // As on the usage page: an empty range is a mistake to name, not an empty log.
  if (from && to && from >= to) throw rangeOutOfOrder();
  return {
    ...(q.key_id !== undefined && { keyNumber: q.key_id }),
    ...(q.model !== undefined && { model: q.model }),
    ...(q.supplier !== undefined && { supplier: q.supplier }),
    ...(q.status !== undefined && { status: q.status }),
    ...(q.code !== undefined && { code: q.code }),
    ...(from && { from }),
    ...(to && { to }),
  };
}

export function requestLogRouter(deps: PortalDeps): Router {
  const router = Router();
  applyPathParamRules(router);
  const guard = requireAction('usage.view');
  const scopeOf = (req: Request) => viewScope(req);

  /** One page of the log for these (valid) filters; a cursor that is not ours is the cursor's 422. */
  const pageOf = async (req: Request, q: z.infer<typeof pageQuery>) => {
    try {
      return await listRequests(deps.database, scopeOf(req), filtersOf(q), { limit: q.limit ?? 50, ...(q.cursor && { cursor: q.cursor }) });
    } catch (error) {
      if (error instanceof InvalidLogCursorError)
        throw validationError([{ loc: ['query', 'cursor'], msg: 'must be the next_cursor of a previous page', type: 'value_error' }]);
      throw error;
    }
  };

  /**
   * The list page: `kept` the query to carry into the next-page and export links, `query` the
   * filters as the form shows them; after a refused filter, its status and problems.
   */
  const showList = (
    res: Response,
    page: Awaited<ReturnType<typeof pageOf>>,
    query: Record<string, unknown>,
    kept: Record<string, string>,
    refused: { status: number; issues: FormIssue[] } = { status: 200, issues: [] },
    limit: number | undefined = undefined,
  ) => {
    const keep = new URLSearchParams(kept);
    res.status(refused.status).render('dashboard/request-log/list', {
      title: 'Request log',
      section: 'request-log',
      entries: page.data,
      query,
      issues: refused.issues,
      // The next page keeps the page size (`limit`), which the export link has no use for.
      nextHref: page.next
        ? `/dashboard/request-log?${new URLSearchParams({ ...kept, ...(limit !== undefined && { limit: String(limit) }), cursor: page.next }).toString()}`
        : null,
      exportHref: `/dashboard/request-log/export${keep.size ? `?${keep.toString()}` : ''}`,
    });
  };

  router.get(
    '/dashboard/request-log',
    guard,
    validate({ query: pageQuery }),
    async (req: Request, res: Response) => {
      const q = req.valid!.query as z.infer<typeof pageQuery>;
      const page = await pageOf(req, q);
      if (wantsJson(req)) return void res.json({ object: 'list', data: page.data, next_cursor: page.next });
      const { cursor: _c, limit: _l, ...kept } = req.query as Record<string, string>;
      showList(res, page, q, kept, undefined, q.limit);
    },
    // A filter it refuses: the newest requests unfiltered, the problem above the form, the filters as typed.
    refusedFiltersPage(async (req, res, status, issues) => {
      const typed = Object.fromEntries(Object.entries(req.query).map(([k, v]) => [k, typedValue(v)]));
      showList(res, await pageOf(req, {}), typed, {}, { status, issues });
    }),
  );

  router.get('/dashboard/request-log/export', guard, validate({ query: filterQuery }), async (req, res) => {
    const filters = filtersOf(req.valid!.query as z.infer<typeof filterQuery>);
    res.set('content-type', 'text/csv; charset=utf-8');
    res.set('content-disposition', 'attachment; filename="request-log.csv"');
    res.write(csvLine(requestLogCsvHeader));
    // Page by page from the database to the socket, waiting for the socket to drain: memory
    // stays flat however many rows match, and a client that goes away stops the query loop.
    for await (const entry of eachRequest(deps.database, scopeOf(req), filters)) {
      if (!(await writeOrGone(res, csvLine(requestLogCsvCells(entry))))) return;
    }
    res.end();
  });

  router.get('/dashboard/request-log/:request_id', guard, validate({ params: z.object({ request_id: sequenceId }) }), async (req, res) => {
    const id = (req.valid!.params as { request_id: number }).request_id;
    const entry = await findRequest(deps.database, scopeOf(req), id);
    if (!entry) throw new ApiError('not_found', { humanMessage: 'There is no request with this id among the requests you can see' });
    if (wantsJson(req)) return res.json(entry);
    res.render('dashboard/request-log/detail', { title: `Request ${entry.request_id}`, section: 'request-log', entry });
  });

  return router;
}
