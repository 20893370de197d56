// GET /v1/models: a fixed catalogue. Anthropic clients (recognised by `anthropic-version`) get
// Anthropic's list shape, everyone else OpenAI's.
import { type Exchange, sendJson } from './http.js';

/** Model ids the simulator advertises (any model name is accepted on the endpoints). */
export const MODEL_IDS = [
  'gpt-4o',
  'gpt-4o-mini',
  'claude-sonnet-4-6',
  'claude-haiku-4-5',
  'text-embedding-3-small',
  'whisper-1',
  'tts-1',
  'rerank-v3.5',
] as const;

const CREATED = 1_700_000_000;

/** Handles GET /v1/models. */
export function handleModels(ex: Exchange): void {
  if (ex.req.headers['anthropic-version'] !== undefined) {
    const data = MODEL_IDS.map((id) => ({ type: 'model', id, display_name: id, created_at: new Date(CREATED * 1000).toISOString() }));
    return sendJson(ex, 200, { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null });
  }
  sendJson(ex, 200, { object: 'list', data: MODEL_IDS.map((id) => ({ id, object: 'model', created: CREATED, owned_by: 'simulator' })) });
}
