// POST /v1/chat/completions in OpenAI's wire format, JSON and SSE (OpenAI's public API reference).
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
import { asObject, type Exchange, optionalInt, sendError, sendJson, stopList } from './http.js';
import { SseStream } from './sse.js';
import { planToolCalls, type PlannedCall, type ToolMode, type ToolSpec, UnknownToolError, valueFromSchema } from './tools.js';

const FINGERPRINT = 'fp_simulator';
/** Size of the `arguments` pieces of a streamed tool call; small so clients must join fragments. */
const ARG_FRAGMENT = 8;

interface ChoicePlan {
  content: string | null;
  calls: Array<PlannedCall & { id: string }>;
  finish: 'stop' | 'length' | 'tool_calls';
  tokens: number;
}

/** Handles a chat completion request (already parsed JSON). */
export function handleChatCompletions(ex: Exchange, raw: unknown): void {
  const body = asObject(raw);
  if (!body) return sendError(ex, 400, 'The request body must be a JSON object.');
  const model = body.model;
  if (typeof model !== 'string' || model === '') {
    return sendError(ex, 400, 'you must provide a model parameter', { param: 'model', code: 'missing_required_parameter' });
  }
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) {
    return sendError(ex, 400, "'messages' must be a non-empty array.", { param: 'messages' });
  }
  const n = optionalInt(body, 'n') ?? 1;
  if (Number.isNaN(n) || n < 1 || n > 128) return sendError(ex, 400, "'n' must be an integer from 1 to 128.", { param: 'n' });
  const maxTokens = optionalInt(body, 'max_completion_tokens') ?? optionalInt(body, 'max_tokens');
  if (Number.isNaN(maxTokens)) return sendError(ex, 400, "'max_tokens' must be a non-negative integer.", { param: 'max_tokens' });

  const listed = readTools(body.tools);
  if (typeof listed === 'string') return sendError(ex, 400, listed, { param: 'tools' });
  const choice = readToolChoice(body.tool_choice);
  if (choice === null) return sendError(ex, 400, "Invalid value for 'tool_choice'.", { param: 'tool_choice' });
  const { mode, allowed } = choice;
  const tools = allowed === undefined ? listed : listed.filter((t) => allowed.includes(t.name));

  let promptTokens = toolsTokens(body.tools);
  let userText = '';
  for (const m of messages) {
    promptTokens += messageTokens(m);
    const msg = asObject(m);
    if (msg?.role === 'user') userText = plainText(msg.content);
  }
  const lastRole = asObject(messages[messages.length - 1])?.role;

  let calls: PlannedCall[] = [];
  try {
    if (lastRole !== 'tool') calls = planToolCalls(tools, mode, body.parallel_tool_calls !== false);
  } catch (err) {
    if (err instanceof UnknownToolError) return sendError(ex, 400, err.message, { param: 'tool_choice' });
    throw err;
  }

  const baseText = calls.length > 0 ? '' : formatText(body.response_format, userText);
  const stops = stopList(body.stop);
  const choices: ChoicePlan[] = [];
  for (let i = 0; i < n; i++) {
    if (calls.length > 0) {
      const withIds = calls.map((c) => ({ ...c, id: newId('call_') }));
      const tokens = withIds.reduce((sum, c) => sum + estimateTokens(c.name + c.arguments), 0);
      choices.push({ content: null, calls: withIds, finish: 'tool_calls', tokens });
      continue;
    }
    // Extra choices differ from the first, as independent samples would.
    const text = i === 0 ? baseText : `${baseText} (variant ${i + 1})`;
    const limited = limitText(text, maxTokens, stops);
    choices.push({
      content: limited.text,
      calls: [],
      finish: limited.cut === 'length' ? 'length' : 'stop',
      tokens: estimateTokens(limited.text),
    });
  }
  const completionTokens = choices.reduce((sum, c) => sum + c.tokens, 0);
  const usage = chatUsage(promptTokens, completionTokens);
  const id = newId('chatcmpl-');
  const created = unixSeconds();

  if (body.stream === true) {
    const streamOptions = asObject(body.stream_options);
    return streamChat(ex, id, created, model, choices, streamOptions?.include_usage === true ? usage : null);
  }
  sendJson(ex, 200, {
    id,
    object: 'chat.completion',
    created,
    model,
    choices: choices.map((c, index) => ({
      index,
      message: {
        role: 'assistant',
        content: c.content,
        refusal: null,
        annotations: [],
        ...(c.calls.length > 0 ? { tool_calls: c.calls.map((t) => toolCallOf(t)) } : {}),
      },
      logprobs: null,
      finish_reason: c.finish,
    })),
    usage,
    service_tier: 'default',
    system_fingerprint: FINGERPRINT,
  });
}

function streamChat(
  ex: Exchange,
  id: string,
  created: number,
  model: string,
  choices: ChoicePlan[],
  usage: ReturnType<typeof chatUsage> | null,
): void {
  const sse = new SseStream(ex);
  // With include_usage every chunk carries `usage: null` until the final usage-only chunk.
  const chunk = (choice: Record<string, unknown> | null): Record<string, unknown> => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    service_tier: 'default',
    system_fingerprint: FINGERPRINT,
    choices: choice ? [choice] : [],
    ...(usage ? { usage: null } : {}),
  });
  const delta = (index: number, d: Record<string, unknown>, finish: string | null = null) =>
    chunk({ index, delta: d, logprobs: null, finish_reason: finish });

  for (let index = 0; index < choices.length; index++) {
    const c = choices[index];
    if (!c) continue;
    const role =
      c.calls.length > 0 ? { role: 'assistant', content: null, refusal: null } : { role: 'assistant', content: '', refusal: null };
    if (!sse.send(null, delta(index, role))) return;
    for (const piece of streamPieces(c.content ?? '')) {
      if (!sse.send(null, delta(index, { content: piece }))) return;
    }
    for (let k = 0; k < c.calls.length; k++) {
      const call = c.calls[k];
      if (!call) continue;
      if (call.custom) {
        // A custom tool's call comes whole: its input is text, not JSON arguments to assemble.
        if (!sse.send(null, delta(index, { tool_calls: [{ index: k, ...toolCallOf(call) }] }))) return;
        continue;
      }
      const head = { index: k, id: call.id, type: 'function', function: { name: call.name, arguments: '' } };
      if (!sse.send(null, delta(index, { tool_calls: [head] }))) return;
      for (const piece of fragments(call.arguments, ARG_FRAGMENT)) {
        if (!sse.send(null, delta(index, { tool_calls: [{ index: k, function: { arguments: piece } }] }))) return;
      }
    }
    if (!sse.send(null, delta(index, {}, c.finish))) return;
  }
  if (usage && !sse.send(null, { ...chunk(null), usage })) return;
  if (!sse.send(null, '[DONE]')) return;
  sse.end();
}

/** The usage object of chat completions, with the detail fields the SDK types declare. */
export function chatUsage(prompt: number, completion: number) {
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

/** The reply content, honouring `response_format` (JSON modes always produce valid JSON). */
function formatText(format: unknown, userText: string): string {
  const f = asObject(format);
  const reply = replyText(userText);
  if (f?.type === 'json_object') return JSON.stringify({ reply });
  if (f?.type === 'json_schema') {
    const spec = asObject(f.json_schema);
    const schema = spec?.schema;
    return JSON.stringify(
      schema === undefined ? { reply } : valueFromSchema(schema, typeof spec?.name === 'string' ? spec.name : 'value', 0),
    );
  }
  return reply;
}

/** A planned call as chat completions show it: a function call, or a custom tool's call with its text input. */
function toolCallOf(call: PlannedCall & { id: string }): Record<string, unknown> {
  return call.custom
    ? { id: call.id, type: 'custom', custom: { name: call.name, input: call.arguments } }
    : { id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } };
}

/** Tool list from `tools` (functions, and `custom` tools with free-text input); a string is a validation error message. */
function readTools(value: unknown): ToolSpec[] | string {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) return "'tools' must be an array.";
  const out: ToolSpec[] = [];
  for (let i = 0; i < value.length; i++) {
    const tool = asObject(value[i]);
    if (tool?.type === 'custom') {
      const custom = asObject(tool.custom);
      if (!custom || typeof custom.name !== 'string' || custom.name === '') return `Missing required parameter: 'tools[${i}].custom.name'.`;
      out.push({ name: custom.name, schema: undefined, custom: true });
      continue;
    }
    const fn = asObject(tool?.function);
    if (!fn || typeof fn.name !== 'string' || fn.name === '') return `Missing required parameter: 'tools[${i}].function.name'.`;
    out.push({ name: fn.name, schema: fn.parameters ?? { type: 'object', properties: {} } });
  }
  return out;
}

/** The name a tool entry of `allowed_tools` gives ({type, function: {name}} or {type, custom: {name}} or {type, name}). */
function allowedName(entry: unknown): string | undefined {
  const e = asObject(entry);
  const name = asObject(e?.function)?.name ?? asObject(e?.custom)?.name ?? e?.name;
  return typeof name === 'string' ? name : undefined;
}

/** Normalised `tool_choice` (and, for `allowed_tools`, the tools it allows); null when invalid. */
function readToolChoice(value: unknown): { mode: ToolMode; allowed?: string[] } | null {
  if (value === undefined || value === null || value === 'auto') return { mode: 'auto' };
  if (value === 'none' || value === 'required') return { mode: value };
  const choice = asObject(value);
  if (choice?.type === 'allowed_tools') {
    const spec = asObject(choice.allowed_tools);
    const names = Array.isArray(spec?.tools) ? spec.tools.map(allowedName) : [];
    if ((spec?.mode !== 'auto' && spec?.mode !== 'required') || names.length === 0 || names.includes(undefined)) return null;
    return { mode: spec.mode, allowed: names as string[] };
  }
  const name = (choice?.type === 'custom' ? asObject(choice.custom) : asObject(choice?.function))?.name;
  return typeof name === 'string' ? { mode: { name } } : null;
}
