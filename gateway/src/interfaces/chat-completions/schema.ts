import { z } from 'zod';
import { modelIdField } from '../../http/validate.js';
import { checkedField, checkedFileData, checkedImageUrl } from '../image-source.js';

/** OpenAI's chat completions take at most this many tools (more is its 400). */
export const maxChatTools = 128;

const textPart = z.looseObject({ type: z.literal('text'), text: z.string() });
const imagePart = z.looseObject({
  type: z.literal('image_url'),
  image_url: z.looseObject({
    url: checkedField(checkedImageUrl),
    detail: z.enum(['auto', 'low', 'high']).optional(),
  }),
});
/** An inline file (`file_data`) is held to the image rule: a base64 data URL, or base64 alone. */
const filePart = z.looseObject({
  type: z.literal('file'),
  file: z.looseObject({ file_data: checkedField(checkedFileData).optional() }).optional(),
});
const otherPart = z.looseObject({ type: z.enum(['input_audio', 'refusal']) });
const contentPart = z.discriminatedUnion('type', [textPart, imagePart, filePart, otherPart]);
const content = z.union([z.string(), z.array(contentPart)]);

const functionCall = z.looseObject({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.looseObject({ name: z.string().min(1), arguments: z.string() }),
});
/** A call of a `custom` tool in an assistant message (a later turn of a custom-tool conversation). */
const customCall = z.looseObject({
  id: z.string().min(1),
  type: z.literal('custom'),
  custom: z.looseObject({ name: z.string().min(1), input: z.string() }),
});
const toolCall = z.discriminatedUnion('type', [functionCall, customCall]);
/** One tool call of an assistant message. */
export type ChatToolCall = z.infer<typeof toolCall>;

const message = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content, name: z.string().optional() }),
  z.looseObject({ role: z.literal('developer'), content, name: z.string().optional() }),
  z.looseObject({ role: z.literal('user'), content, name: z.string().optional() }),
  z.looseObject({
    role: z.literal('assistant'),
    content: content.nullable().optional(),
    tool_calls: z.array(toolCall).optional(),
    refusal: z.string().nullable().optional(),
  }),
  z.looseObject({ role: z.literal('tool'), content, tool_call_id: z.string().min(1) }),
  // The legacy function-calling result (before tool_call_id existed): passed to OpenAI-protocol
  // suppliers as sent, refused in translation (it pairs with no call id).
  z.looseObject({ role: z.literal('function'), name: z.string().min(1), content: z.string().nullable() }),
]);

const functionTool = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'tool names are 1-64 letters, digits, _ or -'),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullable().optional(),
  }),
});

/**
 * A tool OpenAI defines beside functions: `custom` (free-form text input, optionally held to a
 * grammar). Passed to OpenAI-protocol suppliers as sent; a translation has no form for it and
 * refuses it naming `tools[i]`.
 */
const customTool = z.looseObject({
  type: z.literal('custom'),
  custom: z.looseObject({ name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'tool names are 1-64 letters, digits, _ or -') }),
});
const tool = z.discriminatedUnion('type', [functionTool, customTool]);
/** One tool of a chat request. */
export type ChatTool = z.infer<typeof tool>;
/** A function tool (the only kind every supplier protocol can carry). */
export type FunctionTool = z.infer<typeof functionTool>;
/** Whether a tool is a function tool. */
export const isFunctionTool = (t: ChatTool): t is FunctionTool => t.type === 'function';

const toolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string().min(1) }) }),
  z.looseObject({ type: z.literal('custom'), custom: z.looseObject({ name: z.string().min(1) }) }),
  // Limits the tools the model may call to a subset of `tools` (mode auto or required).
  z.looseObject({
    type: z.literal('allowed_tools'),
    allowed_tools: z.looseObject({
      mode: z.enum(['auto', 'required'], { message: 'must be auto or required' }),
      tools: z.array(z.looseObject({ type: z.string() })).min(1),
    }),
  }),
]);
/** The tool a `tool_choice` forces by name, if it names one (function or custom). */
export function forcedToolName(choice: unknown): string | undefined {
  if (typeof choice !== 'object' || choice === null) return undefined;
  const c = choice as { type?: unknown; function?: { name?: unknown }; custom?: { name?: unknown } };
  const name = c.type === 'function' ? c.function?.name : c.type === 'custom' ? c.custom?.name : undefined;
  return typeof name === 'string' ? name : undefined;
}

const responseFormat = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text') }),
  z.looseObject({ type: z.literal('json_object') }),
  z.looseObject({
    type: z.literal('json_schema'),
    json_schema: z.looseObject({
      name: z.string().min(1).max(64),
      description: z.string().optional(),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullable().optional(),
    }),
  }),
]);

/**
 * OpenAI fields the gateway passes through to OpenAI-protocol suppliers as they are, but never of
 * the wrong type: a supplier would refuse (or ignore) them, and the client deserves the gateway's
 * own 400 naming the field. `null` is allowed where OpenAI allows it.
 */
const passedThrough: Record<string, z.ZodType> = {
  store: z.boolean().nullable(),
  reasoning_effort: z.string().max(32).nullable(),
  verbosity: z.string().max(32).nullable(),
  service_tier: z.string().max(32).nullable(),
  logit_bias: z.record(z.string(), z.number().min(-100).max(100)).nullable(),
  modalities: z.array(z.string().max(32)).max(8).nullable(),
  prediction: z.looseObject({ type: z.string() }).nullable(),
  audio: z.looseObject({}).nullable(),
  web_search_options: z.looseObject({}).nullable(),
  prompt_cache_key: z.string().max(1024).nullable(),
  safety_identifier: z.string().max(256).nullable(),
};

/**
 * `POST /v1/chat/completions` request. Fields the gateway acts on are checked here; other
 * OpenAI fields pass through untouched to OpenAI-protocol suppliers (loose objects).
 */
export const chatCompletionRequest = z
  .looseObject({
    model: modelIdField,
    messages: z.array(message).min(1),
    stream: z.boolean().optional(),
    stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
    temperature: z.number().min(0).max(2).nullable().optional(),
    top_p: z.number().min(0).max(1).nullable().optional(),
    max_tokens: z.number().int().positive().nullable().optional(),
    max_completion_tokens: z.number().int().positive().nullable().optional(),
    n: z.number().int().min(1).max(128).nullable().optional(),
    stop: z
      .union([z.string(), z.array(z.string()).max(4)])
      .nullable()
      .optional(),
    region: z.string().min(1).max(32).optional(),
    metadata: z
      .record(z.string(), z.string().max(512))
      .refine((m) => Object.keys(m).length <= 16, 'metadata holds at most 16 pairs')
      .nullable()
      .optional(),
    user: z.string().max(256).optional(),
    tools: z.array(tool).max(maxChatTools).optional(),
    tool_choice: toolChoice.optional(),
    parallel_tool_calls: z.boolean().optional(),
    response_format: responseFormat.optional(),
    seed: z.number().int().nullable().optional(),
    frequency_penalty: z.number().min(-2).max(2).nullable().optional(),
    presence_penalty: z.number().min(-2).max(2).nullable().optional(),
    logprobs: z.boolean().nullable().optional(),
    top_logprobs: z.number().int().min(0).max(20).nullable().optional(),
  })
  .superRefine((request, ctx) => {
    // Fields passed through as they are, type-checked only when present (a member of the object
    // schema would cost every request the check, present or not: ~1 µs, measured in review).
    for (const field in passedThrough) {
      const value = (request as Record<string, unknown>)[field];
      if (value === undefined) continue;
      const checked = passedThrough[field]!.safeParse(value);
      if (!checked.success)
        for (const issue of checked.error.issues) ctx.addIssue({ code: 'custom', path: [field, ...issue.path], message: issue.message });
    }
    // As OpenAI answers: options of a stream the request does not ask for are a mistake to say, not to ignore.
    if (request.stream_options != null && request.stream !== true)
      ctx.addIssue({ code: 'custom', path: ['stream_options'], message: 'is only allowed when "stream" is true' });
    // A forced tool call needs the tool: OpenAI refuses it too, and a translation would drop it silently.
    const choice = request.tool_choice;
    if (choice === 'required' && !request.tools?.length) {
      ctx.addIssue({ code: 'custom', path: ['tool_choice'], message: '"required" forces a tool call, but the request defines no tools' });
    } else {
      const forced = forcedToolName(choice);
      const named = (t: ChatTool) => (isFunctionTool(t) ? t.function.name : t.custom.name);
      if (forced !== undefined && !request.tools?.some((t) => named(t) === forced))
        ctx.addIssue({ code: 'custom', path: ['tool_choice'], message: `names the tool "${forced}", which "tools" does not define` });
    }
  });

/** A validated chat-completions request. */
export type ChatCompletionRequest = z.infer<typeof chatCompletionRequest>;
/** One message of a chat-completions request. */
export type ChatMessage = ChatCompletionRequest['messages'][number];
