// A chat-completions request (as the client's OpenAI-protocol translator built it) → an OpenAI
// Responses API request. Every chat field is either mapped, dropped because it asks for nothing,
// or refused with `unsupported_parameter`: the Responses API has no stop sequences, penalties,
// logit bias or n, and the gateway never changes what a request means silently.
import { ApiError } from '../../../../core/errors/index.js';
import type { ChatCompletionRequest, ChatMessage } from '../../interfaces/chat-completions/schema.js';
import type { ClientFamily } from '../types.js';
import { isJsonObject } from '../shared/safe-json.js';
import { asks, unhandledField } from '../shared/unhandled-fields.js';
import { functionToolsOf, notCarried } from '../shared/function-tools.js';

const servedHere = 'the OpenAI Responses API';

/** The client's own name of a chat field, for error messages (Anthropic clients wrote `stop_sequences`). */
function clientParam(family: ClientFamily, field: string): string {
  if (family === 'anthropic' && field === 'stop') return 'stop_sequences';
  return field;
}

function unsupported(family: ClientFamily, field: string, why: string): ApiError {
  const param = clientParam(family, field);
  return new ApiError('unsupported_parameter', {
    param,
    humanMessage: `${param} cannot be honoured by this model: it is served through the OpenAI Responses API, which ${why}`,
  });
}

/** Chat fields mapped one to one onto the Responses request. */
const sameName = [
  'temperature',
  'top_p',
  'parallel_tool_calls',
  'user',
  'service_tier',
  'prompt_cache_key',
  'prompt_cache_retention',
  'safety_identifier',
  'metadata',
] as const;
/** Chat fields read by the bridge itself (mapped below). */
const handled = new Set<string>([
  ...sameName,
  'model',
  'messages',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
  'tools',
  'tool_choice',
  'response_format',
  'store',
  'reasoning_effort',
  'seed',
  'n',
  'stop',
  'frequency_penalty',
  'presence_penalty',
  'logprobs',
  'top_logprobs',
  'logit_bias',
  'verbosity',
]);

type Part = Extract<Extract<ChatMessage, { role: 'user' }>['content'], readonly unknown[]>[number];

/** A chat content part → a Responses input part. */
function inputPart(part: Part, param: string): Record<string, unknown> {
  const p = part as Record<string, unknown>;
  switch (part.type) {
    case 'text':
      return { type: 'input_text', text: part.text };
    case 'image_url': {
      const image = p.image_url as { url: string; detail?: string };
      return { type: 'input_image', image_url: image.url, detail: image.detail ?? 'auto' };
    }
    case 'file': {
      const file = isJsonObject(p.file) ? p.file : {};
      return { type: 'input_file', ...file };
    }
    default:
      throw new ApiError('unsupported_parameter', {
        param,
        humanMessage: `A ${String(part.type)} content part cannot be sent to this model (it is served through the OpenAI Responses API)`,
      });
  }
}

/** Text of a string or of text parts (system prompts, tool outputs, assistant text). */
function plainText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: unknown) =>
      isJsonObject(part) && typeof part.text === 'string'
        ? part.text
        : isJsonObject(part) && typeof part.refusal === 'string'
          ? part.refusal
          : '',
    )
    .join('');
}

/** Chat messages → `instructions` (the leading system/developer messages) and input items. */
function inputFrom(messages: ChatMessage[]): { instructions: string | undefined; input: Record<string, unknown>[] } {
  const leading: string[] = [];
  const input: Record<string, unknown>[] = [];
  for (const [i, message] of messages.entries()) {
    switch (message.role) {
      case 'system':
      case 'developer':
        if (input.length === 0) leading.push(plainText(message.content));
        else input.push({ role: message.role, content: plainText(message.content) });
        break;
      case 'user':
        input.push({
          role: 'user',
          content:
            typeof message.content === 'string'
              ? message.content
              : message.content.map((part, j) => inputPart(part, `messages[${i}].content[${j}]`)),
        });
        break;
      case 'assistant': {
        const text = plainText(message.content ?? '');
        if (text !== '') input.push({ role: 'assistant', content: text });
        for (const [j, call] of (message.tool_calls ?? []).entries()) {
          if (call.type !== 'function') throw notCarried(`messages[${i}].tool_calls[${j}]`, `A call of a ${call.type} tool`, servedHere);
          input.push({ type: 'function_call', call_id: call.id, name: call.function.name, arguments: call.function.arguments });
        }
        break;
      }
      case 'tool':
        input.push({ type: 'function_call_output', call_id: message.tool_call_id, output: plainText(message.content) });
        break;
      case 'function':
        throw notCarried(`messages[${i}]`, 'A legacy function-role message (send a tool message with its tool_call_id)', servedHere);
      default: {
        const unknown: never = message;
        throw new ApiError('validation_error', {
          param: `messages[${i}].role`,
          humanMessage: `Unknown role ${JSON.stringify((unknown as { role?: unknown }).role)}`,
        });
      }
    }
  }
  const instructions = leading.filter((t) => t !== '').join('\n\n');
  return { instructions: instructions === '' ? undefined : instructions, input };
}

/** The Responses request for a chat request; `upstreamModel` is already in `chat.model`. */
export function responsesRequestFrom(chat: ChatCompletionRequest, family: ClientFamily): Record<string, unknown> {
  const fields = chat as Record<string, unknown>;
  const unhandled = unhandledField(fields, handled);
  if (unhandled !== undefined) throw unsupported(family, unhandled, 'has no such parameter');
  if (asks(chat.stop)) throw unsupported(family, 'stop', 'has no stop sequences');
  if (typeof chat.n === 'number' && chat.n > 1) throw unsupported(family, 'n', 'answers with one choice only');
  for (const field of ['frequency_penalty', 'presence_penalty', 'logit_bias', 'logprobs', 'top_logprobs'] as const) {
    if (asks(fields[field])) throw unsupported(family, field, `has no ${field}`);
  }
  const { instructions, input } = inputFrom(chat.messages);
  const body: Record<string, unknown> = { model: chat.model, input };
  if (instructions !== undefined) body.instructions = instructions;
  for (const field of sameName) if (fields[field] !== undefined && fields[field] !== null) body[field] = fields[field];
  const maxTokens = chat.max_completion_tokens ?? chat.max_tokens;
  if (maxTokens !== undefined && maxTokens !== null) body.max_output_tokens = maxTokens;
  // Chat completions are not stored unless asked; the Responses API stores by default.
  body.store = chat.store === true;
  if (chat.stream === true) body.stream = true;
  if (typeof fields.reasoning_effort === 'string') body.reasoning = { effort: fields.reasoning_effort };
  const { tools, toolChoice: choice } = functionToolsOf(chat, servedHere);
  if (tools.length > 0) {
    body.tools = tools.map((tool) => ({
      type: 'function',
      name: tool.function.name,
      ...(tool.function.description !== undefined && { description: tool.function.description }),
      parameters: tool.function.parameters ?? { type: 'object', properties: {} },
      // Responses function tools are strict by default; chat tools are not unless they say so.
      strict: tool.function.strict ?? false,
    }));
  }
  if (choice !== undefined) body.tool_choice = typeof choice === 'string' ? choice : { type: 'function', name: choice.function.name };
  const format = chat.response_format;
  if (format !== undefined) {
    if (format.type === 'json_schema') {
      const schema = format.json_schema as {
        name: string;
        description?: string;
        schema?: Record<string, unknown>;
        strict?: boolean | null;
      };
      body.text = {
        format: {
          type: 'json_schema',
          name: schema.name,
          ...(schema.description !== undefined && { description: schema.description }),
          schema: schema.schema ?? { type: 'object' },
          ...(schema.strict !== undefined && schema.strict !== null && { strict: schema.strict }),
        },
      };
    } else body.text = { format: { type: format.type } };
  }
  // Chat's verbosity is the Responses API's text.verbosity.
  if (typeof fields.verbosity === 'string')
    body.text = { ...(body.text as Record<string, unknown> | undefined), verbosity: fields.verbosity };
  return body;
}
