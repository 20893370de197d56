// POST /v1/messages and /v1/messages/count_tokens in Anthropic's wire format (Anthropic's public Messages API reference).
// Streams always carry `event:` lines: the Anthropic SDK silently drops bare `data:` frames.
import { createHash } from 'node:crypto';
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
} from './deterministic.js';
import { asObject, type Exchange, sendError, sendJson, stopList } from './http.js';
import { SseStream } from './sse.js';
import { planToolCalls, type ToolMode, type ToolSpec, UnknownToolError, valueFromSchema } from './tools.js';

const ARG_FRAGMENT = 8;

type Block =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; json: string };

type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

/** Validated request: what both endpoints need. */
interface Parsed {
  model: string;
  body: Record<string, unknown>;
  messages: unknown[];
  inputTokens: number;
}

/** Handles POST /v1/messages. */
export function handleMessages(ex: Exchange, raw: unknown): void {
  const parsed = parse(ex, raw);
  if (!parsed) return;
  const { body, model, messages, inputTokens } = parsed;
  const maxTokens = body.max_tokens;
  if (maxTokens === undefined) return sendError(ex, 400, 'max_tokens: Field required');
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1) {
    return sendError(ex, 400, 'max_tokens: Input should be a valid integer greater than or equal to 1');
  }
  const tools = readTools(body.tools);
  const mode = readToolChoice(body.tool_choice);
  if (mode === null) return sendError(ex, 400, 'tool_choice: Input tag does not match any of the expected tags');

  let userText = '';
  for (const m of messages) {
    const msg = asObject(m);
    if (msg?.role === 'user') userText = plainText(msg.content);
  }
  const last = asObject(messages[messages.length - 1]);
  // A user turn that carries tool results is the "answer the tool output" turn: reply in text.
  const answersTools =
    last?.role === 'user' && Array.isArray(last.content) && last.content.some((b) => asObject(b)?.type === 'tool_result');

  let calls: ReturnType<typeof planToolCalls> = [];
  try {
    const parallel = asObject(body.tool_choice)?.disable_parallel_tool_use !== true;
    if (!answersTools) calls = planToolCalls(tools, mode, parallel);
  } catch (err) {
    if (err instanceof UnknownToolError) return sendError(ex, 400, err.message);
    throw err;
  }

  const blocks: Block[] = [];
  let stopReason: StopReason = 'end_turn';
  let stopSequence: string | null = null;
  const thinkingType = asObject(body.thinking)?.type;
  if (thinkingType === 'enabled' || thinkingType === 'adaptive') {
    const thinking = `Simulated thinking about: ${userText.split(/\s+/).slice(0, 6).join(' ')}`;
    const signature = createHash('sha256').update(thinking).digest('base64');
    blocks.push({ type: 'thinking', thinking, signature });
  }
  const first = calls[0];
  if (first) {
    // With tool_choice auto Claude usually explains itself first; forced choices go straight to tool_use.
    if (mode === 'auto') blocks.push({ type: 'text', text: `I'll use the ${first.name} tool.` });
    for (const c of calls) blocks.push({ type: 'tool_use', id: newId('toolu_'), name: c.name, json: c.arguments });
    stopReason = 'tool_use';
  } else {
    // Structured output (`output_config.format`): the whole answer is JSON following the schema.
    const format = asObject(asObject(body.output_config)?.format);
    const structured = format?.type === 'json_schema' ? JSON.stringify(valueFromSchema(format.schema, 'value', 0)) : undefined;
    const limited = limitText(structured ?? replyText(userText), maxTokens, stopList(body.stop_sequences));
    blocks.push({ type: 'text', text: limited.text });
    if (limited.cut === 'length') stopReason = 'max_tokens';
    else if (limited.cut === 'stop') {
      stopReason = 'stop_sequence';
      stopSequence = limited.stopSequence;
    }
  }
  let outputTokens = 0;
  for (const b of blocks) {
    outputTokens += estimateTokens(b.type === 'text' ? b.text : b.type === 'thinking' ? b.thinking : b.name + b.json);
  }
  const id = newId('msg_');
  if (body.stream === true) return streamMessage(ex, id, model, blocks, stopReason, stopSequence, inputTokens, outputTokens);
  sendJson(ex, 200, {
    id,
    type: 'message',
    role: 'assistant',
    model,
    content: blocks.map(toContent),
    stop_reason: stopReason,
    stop_sequence: stopSequence,
    usage: usage(inputTokens, outputTokens),
  });
}

/** Handles POST /v1/messages/count_tokens → `{input_tokens}` (same count as /v1/messages). */
export function handleCountTokens(ex: Exchange, raw: unknown): void {
  const parsed = parse(ex, raw);
  if (parsed) sendJson(ex, 200, { input_tokens: parsed.inputTokens });
}

function parse(ex: Exchange, raw: unknown): Parsed | null {
  const body = asObject(raw);
  if (!body) {
    sendError(ex, 400, 'The request body must be a JSON object');
    return null;
  }
  if (typeof body.model !== 'string' || body.model === '') {
    sendError(ex, 400, 'model: Field required');
    return null;
  }
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) {
    sendError(ex, 400, 'messages: Field required (a non-empty list)');
    return null;
  }
  let inputTokens = toolsTokens(body.tools);
  if (body.system !== undefined) inputTokens += messageTokens(body.system);
  for (let i = 0; i < messages.length; i++) {
    const role = asObject(messages[i])?.role;
    if (role !== 'user' && role !== 'assistant') {
      sendError(ex, 400, `messages.${i}.role: Input should be 'user' or 'assistant'`);
      return null;
    }
    inputTokens += messageTokens(messages[i]);
  }
  return { model: body.model, body, messages, inputTokens };
}

function streamMessage(
  ex: Exchange,
  id: string,
  model: string,
  blocks: Block[],
  stopReason: StopReason,
  stopSequence: string | null,
  inputTokens: number,
  outputTokens: number,
): void {
  const sse = new SseStream(ex);
  const start = {
    type: 'message_start',
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: usage(inputTokens, 1),
    },
  };
  if (!sse.send('message_start', start)) return;
  if (!sse.send('ping', { type: 'ping' })) return;
  for (let index = 0; index < blocks.length; index++) {
    const b = blocks[index];
    if (!b) continue;
    const delta = (d: Record<string, unknown>) => sse.send('content_block_delta', { type: 'content_block_delta', index, delta: d });
    let ok: boolean;
    if (b.type === 'text') {
      ok = sse.send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      const pieces = streamPieces(b.text);
      if (pieces.length === 0) pieces.push('');
      for (const p of pieces) ok = ok && delta({ type: 'text_delta', text: p });
    } else if (b.type === 'thinking') {
      ok = sse.send('content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'thinking', thinking: '', signature: '' },
      });
      for (const p of streamPieces(b.thinking)) ok = ok && delta({ type: 'thinking_delta', thinking: p });
      ok = ok && delta({ type: 'signature_delta', signature: b.signature });
    } else {
      ok = sse.send('content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} },
      });
      // The real API opens tool input with an empty fragment; clients must cope with it.
      for (const p of ['', ...fragments(b.json, ARG_FRAGMENT)]) ok = ok && delta({ type: 'input_json_delta', partial_json: p });
    }
    if (!ok || !sse.send('content_block_stop', { type: 'content_block_stop', index })) return;
  }
  const finalUsage = usage(inputTokens, outputTokens);
  const messageDelta = {
    type: 'message_delta',
    delta: { stop_reason: stopReason, stop_sequence: stopSequence },
    usage: {
      input_tokens: finalUsage.input_tokens,
      output_tokens: finalUsage.output_tokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  };
  if (!sse.send('message_delta', messageDelta)) return;
  if (!sse.send('message_stop', { type: 'message_stop' })) return;
  sse.end();
}

function toContent(b: Block): Record<string, unknown> {
  if (b.type === 'tool_use') return { type: 'tool_use', id: b.id, name: b.name, input: JSON.parse(b.json) as unknown };
  if (b.type === 'thinking') return { type: 'thinking', thinking: b.thinking, signature: b.signature };
  return { type: 'text', text: b.text };
}

function usage(input: number, output: number) {
  return {
    input_tokens: input,
    output_tokens: output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    server_tool_use: null,
    service_tier: 'standard',
  };
}

/** Client tools only (server tools have no input_schema but still count as named tools). */
function readTools(value: unknown): ToolSpec[] {
  if (!Array.isArray(value)) return [];
  const out: ToolSpec[] = [];
  for (const t of value) {
    const tool = asObject(t);
    if (tool && typeof tool.name === 'string') out.push({ name: tool.name, schema: tool.input_schema ?? { type: 'object' } });
  }
  return out;
}

function readToolChoice(value: unknown): ToolMode | null {
  if (value === undefined || value === null) return 'auto';
  const choice = asObject(value);
  switch (choice?.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      return typeof choice.name === 'string' ? { name: choice.name } : null;
    default:
      return null;
  }
}
