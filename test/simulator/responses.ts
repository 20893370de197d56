// POST /v1/responses in OpenAI's Responses format (OpenAI's public Responses API reference): the response object, or
// with stream:true the `event: response.*` sequence with increasing sequence_number and no [DONE].
import {
  estimateTokens,
  fragments,
  limitText,
  messageTokens,
  newId,
  plainText,
  replyText,
  streamPieces,
  toolsTokens,
  unixSeconds,
} from './deterministic.js';
import { asObject, type Exchange, optionalInt, sendError, sendJson } from './http.js';
import { SseStream } from './sse.js';
import { planToolCalls, type ToolMode, type ToolSpec, UnknownToolError, valueFromSchema } from './tools.js';

const ARG_FRAGMENT = 8;

interface FunctionCallItem {
  id: string;
  type: 'function_call';
  status: 'completed';
  arguments: string;
  call_id: string;
  name: string;
}

interface MessageItem {
  id: string;
  type: 'message';
  status: 'completed' | 'incomplete';
  role: 'assistant';
  content: Array<{ type: 'output_text'; text: string; annotations: []; logprobs: [] }>;
}

type OutputItem = FunctionCallItem | MessageItem;

/** Handles POST /v1/responses. */
export function handleResponses(ex: Exchange, raw: unknown): void {
  const body = asObject(raw);
  if (!body) return sendError(ex, 400, 'The request body must be a JSON object.');
  const model = body.model;
  if (typeof model !== 'string' || model === '') return sendError(ex, 400, "Missing required parameter: 'model'.", { param: 'model' });
  const input = body.input;
  if (typeof input !== 'string' && !Array.isArray(input)) {
    return sendError(ex, 400, "Missing required parameter: 'input'.", { param: 'input' });
  }
  const maxTokens = optionalInt(body, 'max_output_tokens');
  if (Number.isNaN(maxTokens)) return sendError(ex, 400, "'max_output_tokens' must be a positive integer.", { param: 'max_output_tokens' });
  const mode = readToolChoice(body.tool_choice);
  if (mode === null) return sendError(ex, 400, "Invalid value for 'tool_choice'.", { param: 'tool_choice' });

  let inputTokens = toolsTokens(body.tools);
  if (typeof body.instructions === 'string') inputTokens += messageTokens(body.instructions);
  let userText = '';
  let lastType: unknown;
  if (typeof input === 'string') {
    userText = input;
    inputTokens += messageTokens(input);
  } else {
    for (const item of input) {
      inputTokens += messageTokens(item);
      const obj = asObject(item);
      if (obj?.role === 'user') userText = plainText(obj.content);
      lastType = obj?.type;
    }
  }

  let calls: ReturnType<typeof planToolCalls> = [];
  try {
    if (lastType !== 'function_call_output') calls = planToolCalls(readTools(body.tools), mode, body.parallel_tool_calls !== false);
  } catch (err) {
    if (err instanceof UnknownToolError) return sendError(ex, 400, err.message, { param: 'tool_choice' });
    throw err;
  }

  const output: OutputItem[] = [];
  let incomplete = false;
  let outputTokens = 0;
  for (const c of calls) {
    output.push({
      id: newId('fc_'),
      type: 'function_call',
      status: 'completed',
      arguments: c.arguments,
      call_id: newId('call_'),
      name: c.name,
    });
    outputTokens += estimateTokens(c.name + c.arguments);
  }
  if (calls.length === 0) {
    const limited = limitText(formatText(asObject(body.text)?.format, userText), maxTokens, []);
    incomplete = limited.cut === 'length';
    outputTokens += estimateTokens(limited.text);
    output.push({
      id: newId('msg_'),
      type: 'message',
      status: incomplete ? 'incomplete' : 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: limited.text, annotations: [], logprobs: [] }],
    });
  }
  const usage = {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + outputTokens,
  };
  const base = { id: newId('resp_'), created_at: unixSeconds(), model, body };
  const final = responseObject(base, incomplete ? 'incomplete' : 'completed', output, usage);
  if (body.stream !== true) return sendJson(ex, 200, final);
  streamResponse(ex, responseObject(base, 'in_progress', [], null), output, final);
}

function streamResponse(ex: Exchange, initial: Record<string, unknown>, output: OutputItem[], final: Record<string, unknown>): void {
  const sse = new SseStream(ex);
  let seq = 0;
  const emit = (type: string, data: Record<string, unknown>) => sse.send(type, { type, sequence_number: seq++, ...data });
  if (!emit('response.created', { response: initial })) return;
  if (!emit('response.in_progress', { response: initial })) return;
  for (let outputIndex = 0; outputIndex < output.length; outputIndex++) {
    const item = output[outputIndex];
    if (!item) continue;
    const at = { item_id: item.id, output_index: outputIndex };
    if (item.type === 'function_call') {
      if (!emit('response.output_item.added', { output_index: outputIndex, item: { ...item, arguments: '', status: 'in_progress' } }))
        return;
      for (const delta of fragments(item.arguments, ARG_FRAGMENT)) {
        if (!emit('response.function_call_arguments.delta', { ...at, delta })) return;
      }
      if (!emit('response.function_call_arguments.done', { ...at, name: item.name, arguments: item.arguments })) return;
    } else {
      const part = item.content[0];
      const text = part?.text ?? '';
      if (!emit('response.output_item.added', { output_index: outputIndex, item: { ...item, status: 'in_progress', content: [] } })) return;
      const partAt = { ...at, content_index: 0 };
      if (!emit('response.content_part.added', { ...partAt, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } }))
        return;
      for (const delta of streamPieces(text)) {
        if (!emit('response.output_text.delta', { ...partAt, delta, logprobs: [] })) return;
      }
      if (!emit('response.output_text.done', { ...partAt, text, logprobs: [] })) return;
      if (!emit('response.content_part.done', { ...partAt, part })) return;
    }
    if (!emit('response.output_item.done', { output_index: outputIndex, item })) return;
  }
  const terminal = final.status === 'incomplete' ? 'response.incomplete' : 'response.completed';
  if (!emit(terminal, { response: final })) return;
  sse.end();
}

function responseObject(
  base: { id: string; created_at: number; model: string; body: Record<string, unknown> },
  status: 'in_progress' | 'completed' | 'incomplete',
  output: OutputItem[],
  usage: Record<string, unknown> | null,
): Record<string, unknown> {
  const b = base.body;
  return {
    id: base.id,
    object: 'response',
    created_at: base.created_at,
    status,
    background: false,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    max_tool_calls: null,
    model: base.model,
    output,
    parallel_tool_calls: b.parallel_tool_calls ?? true,
    previous_response_id: b.previous_response_id ?? null,
    reasoning: { effort: null, summary: null },
    service_tier: 'default',
    store: b.store ?? true,
    temperature: b.temperature ?? 1,
    text: { format: asObject(b.text)?.format ?? { type: 'text' } },
    tool_choice: b.tool_choice ?? 'auto',
    tools: b.tools ?? [],
    top_p: b.top_p ?? 1,
    truncation: 'disabled',
    usage,
    user: null,
    metadata: b.metadata ?? {},
  };
}

/** Reply text honouring `text.format` (json_object / json_schema give valid JSON). */
function formatText(format: unknown, userText: string): string {
  const f = asObject(format);
  const reply = replyText(userText);
  if (f?.type === 'json_object') return JSON.stringify({ reply });
  if (f?.type === 'json_schema' && f.schema !== undefined) {
    return JSON.stringify(valueFromSchema(f.schema, typeof f.name === 'string' ? f.name : 'value', 0));
  }
  return reply;
}

/** Flat function tools `{type:'function',name,parameters}`; built-in tools are ignored. */
function readTools(value: unknown): ToolSpec[] {
  if (!Array.isArray(value)) return [];
  const out: ToolSpec[] = [];
  for (const t of value) {
    const tool = asObject(t);
    if (tool?.type === 'function' && typeof tool.name === 'string')
      out.push({ name: tool.name, schema: tool.parameters ?? { type: 'object' } });
  }
  return out;
}

function readToolChoice(value: unknown): ToolMode | null {
  if (value === undefined || value === null || value === 'auto') return 'auto';
  if (value === 'none' || value === 'required') return value;
  const choice = asObject(value);
  return choice?.type === 'function' && typeof choice.name === 'string' ? { name: choice.name } : null;
}
