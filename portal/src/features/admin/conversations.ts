// Conversations (docs/administration.md "Conversations"):
//   GET    /dashboard/admin/conversations              sessions in the caller's scope: days, q, before, limit
//   GET    /dashboard/admin/conversations/{conv_id}    its requests (metadata only), oldest first
//   DELETE /api/admin/conversations/{conv_id}          removes the conversation, keeps billing rows
// A conversation id is the client's session id (any text), so it is a string parameter.
import { Router, type Request } from 'express';
import { z } from 'zod';
import { ApiError } from '../../../../core/errors/index.js';
import { isRealDate } from '../../../../core/time/index.js';
import { deleteConversation, listConversations, listRequests } from '../../../../core/usage/index.js';
import type { PortalDeps } from '../../deps.js';
import { wantsJson } from '../../web/errors.js';
import { singleString, validate, wholeNumberParam } from '../../web/validation.js';
import { adminRoute } from './route-table.js';
import { adminKeyScope } from './scope.js';

const listQuery = z.strictObject({
  days: wholeNumberParam(366, 'days').optional(),
  q: singleString(200).optional(),
  before: singleString(40)
    .refine(isRealDate, 'must be a date-time (the last_at of the previous page)')
    .transform((v) => new Date(v))
    .optional(),
  limit: wholeNumberParam(200).optional(),
  // Set by the redirect after a delete, to show the notice.
  deleted: z.literal('1').optional(),
});
const conversationId = z.object({ conv_id: z.string().min(1).max(500, 'must be at most 500 characters') });

export function adminConversationsRouter(deps: PortalDeps): Router {
  const router = Router();
  const knex = deps.database;

  adminRoute(router, 'GET', '/dashboard/admin/conversations', validate({ query: listQuery }), async (req, res) => {
    const q = req.valid!.query as z.infer<typeof listQuery>;
    const days = q.days ?? 30;
    const limit = q.limit ?? 50;
    const data = await listConversations(knex, adminKeyScope(req), {
      since: new Date(deps.clock() - days * 86_400_000),
      limit,
      q: q.q,
      before: q.before,
    });
    const next = data.length === limit ? data.at(-1)!.last_at : null;
    if (wantsJson(req)) return res.json({ data, next_before: next });
    res.render('dashboard/admin/conversations/index', {
      title: 'Conversations',
      section: 'admin-conversations',
      conversations: data,
      query: { ...q, days },
      nextHref: next
        ? `/dashboard/admin/conversations?${new URLSearchParams({ days: String(days), ...(q.q && { q: q.q }), before: next }).toString()}`
        : null,
      deleted: q.deleted === '1',
    });
  });

  adminRoute(router, 'GET', '/dashboard/admin/conversations/:conv_id', validate({ params: conversationId }), async (req, res) => {
    const id = (req.valid!.params as z.infer<typeof conversationId>).conv_id;
    const page = await listRequests(knex, adminKeyScope(req), { session: id }, { limit: 500 });
    if (page.data.length === 0)
      throw new ApiError('not_found', { param: 'conv_id', humanMessage: 'There is no such conversation among those you administer' });
    const requests = [...page.data].reverse();
    if (wantsJson(req)) return res.json({ conversation_id: id, requests, truncated: page.next !== null });
    res.render('dashboard/admin/conversations/detail', {
      title: `Conversation ${id.slice(0, 40)}`,
      section: 'admin-conversations',
      conversationId: id,
      requests,
      truncated: page.next !== null,
    });
  });

  /** Deletes the conversation of `:conv_id` within the caller's reach; how many requests it grouped. */
  const remove = async (req: Request) => {
    const id = (req.valid!.params as z.infer<typeof conversationId>).conv_id;
    const requests = await deleteConversation(knex, adminKeyScope(req), id);
    if (requests === 0)
      throw new ApiError('not_found', { param: 'conv_id', humanMessage: 'There is no such conversation among those you administer' });
    deps.logger.info({ by: req.user!.id, requests }, 'conversation deleted');
    return { id, requests };
  };

  adminRoute(router, 'DELETE', '/api/admin/conversations/:conv_id', validate({ params: conversationId }), async (req, res) => {
    const { id, requests } = await remove(req);
    res.json({ ok: true, conversation_id: id, requests_unlinked: requests });
  });

  // The page's form (forms cannot send DELETE), behind its confirmation.
  adminRoute(router, 'POST', '/dashboard/admin/conversations/:conv_id/delete', validate({ params: conversationId }), async (req, res) => {
    const { id, requests } = await remove(req);
    if (wantsJson(req)) return res.json({ ok: true, conversation_id: id, requests_unlinked: requests });
    res.redirect(303, '/dashboard/admin/conversations?deleted=1');
  });

  return router;
}
