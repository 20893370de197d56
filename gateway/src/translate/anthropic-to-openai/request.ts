// Anthropic messages request → OpenAI chat-completions request (docs/interfaces.md §Translation rules).
import { ApiError } from '../../../../core/errors/index.js';
import { maxChatTools, type ChatCompletionRequest } from '../../interfaces/chat-completions/schema.js';
import { isCustomTool, type CustomTool, type MessagesRequest } from '../../interfaces/messages/schema.js';
import type { TranslationContext } from '../types.js';
import { convertMessages, systemMessage } from './messages.js';
import { responseFormatFromOutputConfig } from './output-config.js';
import type { ToolNameMap } from './tool-names.js';
import { asks, unhandledField } from '../shared/unhandled-fields.js';

type OpenAiToolChoice = NonNullable<ChatCompletionRequest['tool_choice']>;

/** OpenAI accepts at most four stop strings. */
export const maxStopSequences = 4;

function toolChoiceFrom(choice: NonNullable<MessagesRequest['tool_choice']>, names: ToolNameMap): OpenAiToolChoice {
  switch (choice.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      return { type: 'function', function: { name: names.toUpstream(choice.name) } };
    default: {
      const unknown: never = choice;
      throw new ApiError('unsupported_parameter', {
        param: 'tool_choice',
        humanMessage: `Unknown tool_choice type ${JSON.stringify((unknown as { type?: unknown }).type)}`,
      });
    }
  }
}

/**
 * A thread (`thread`: the conversation kept on Anthropic's servers, continued from a stored
 * reply) has no OpenAI form: dropping it would send the last turn alone and answer out of
 * context. Refused with the code the Anthropic SDK reads as "send the whole conversation without
 * `thread`" (ThreadUnsupportedRequestError, `details.unsupported`). A `thread` that asks for
 * nothing (null, false, "", [], {}: shared/unhandled-fields.ts) is left out.
 */
function refuseThread(request: MessagesRequest, context: TranslationContext): void {
  // A value that asks for nothing (null, false, {}) is left out like any other such field.
  if (!asks((request as Record<string, unknown>).thread)) return;
  throw ApiError.foreign(
    'thread_unsupported_request',
    `Threads are kept by Anthropic's own servers; model ${context.publicModel} is served here through an OpenAI-protocol supplier, which keeps none. Send the whole conversation in "messages", without "thread".`,
    { param: 'thread', details: { unsupported: ['thread'] } },
  );
}

/** The client's tools; one defined by Anthropic (web search, bash, …) has no form elsewhere and is refused. */
function customTools(request: MessagesRequest, context: TranslationContext): CustomTool[] {
  const tools = request.tools ?? [];
  // Refused here with the client's own field named, not as the supplier's 400 after a round trip.
  if (tools.length > maxChatTools) {
    throw new ApiError('unsupported_parameter', {
      param: 'tools',
      humanMessage: `Model ${context.publicModel} is served here through an OpenAI-protocol supplier, which takes at most ${maxChatTools} tools; ${tools.length} were sent`,
    });
  }
  return tools.map((tool, i) => {
    if (isCustomTool(tool)) return tool;
    throw new ApiError('unsupported_parameter', {
      param: `tools[${i}]`,
      humanMessage: `Tool type "${String(tool.type)}" is defined and run by Anthropic; model ${context.publicModel} is served here through an OpenAI-protocol supplier, which has no such tool`,
    });
  });
}

/**
 * The messages fields this translation maps, refuses elsewhere (`thread`), or leaves out as docs/interfaces.md says (`top_k`, `thinking`, `service_tier`, a
 * top-level `cache_control` — OpenAI caches prompts by itself —, the gateway's own `region` and
 * metadata keys); `output_config` is read by output-config.ts. Any other field that asks for something is refused, not dropped
 * (shared/unhandled-fields.ts): `mcp_servers`, `container`, `context_management`, and whatever
 * Anthropic adds next.
 */
const handledFields: ReadonlySet<string> = new Set([
  'model',
  'max_tokens',
  'messages',
  'system',
  'tools',
  'tool_choice',
  'stop_sequences',
  'temperature',
  'top_p',
  'top_k',
  'stream',
  'metadata',
  'thinking',
  'service_tier',
  'cache_control',
  'region',
  'thread',
  'output_config',
]);

function refuseUnhandled(request: MessagesRequest, context: TranslationContext): void {
  const unhandled = unhandledField(request, handledFields);
  if (unhandled === undefined) return;
  throw new ApiError('unsupported_parameter', {
    param: unhandled,
    humanMessage: `Model ${context.publicModel} is served here through an OpenAI-protocol supplier, which has no ${unhandled}; omit it`,
  });
}

/**
 * Builds the OpenAI request. The limit goes in the model's `output_limit_field`: `max_tokens` by
 * default (every OpenAI-compatible supplier reads it, while many reject the newer name), or
 * `max_completion_tokens` for OpenAI's reasoning models, which refuse `max_tokens`. top_k, thinking and
 * the gateway's own fields (region, metadata.session_id/sticky_key) are dropped.
 */
export function openAiRequestFrom(request: MessagesRequest, context: TranslationContext, names: ToolNameMap): ChatCompletionRequest {
  refuseThread(request, context);
  refuseUnhandled(request, context);
  if (request.stop_sequences !== undefined && request.stop_sequences.length > maxStopSequences) {
    throw new ApiError('unsupported_parameter', {
      param: 'stop_sequences',
      humanMessage: `This model accepts at most ${maxStopSequences} stop sequences; ${request.stop_sequences.length} were sent`,
    });
  }
  const system = systemMessage(request.system);
  const messages = [...(system === undefined ? [] : [system]), ...convertMessages(request.messages, names)];
  if (messages.length === 0) {
    throw new ApiError('validation_error', { param: 'messages', humanMessage: 'At least one message with non-empty content is required' });
  }
  const body: ChatCompletionRequest = {
    model: context.route.model.upstream,
    messages,
    [context.route.model.outputLimitField]: request.max_tokens,
  };
  const tools = customTools(request, context);
  if (tools.length > 0) {
    body.tools = tools.map((tool) => ({
      type: 'function' as const,
      function: {
        name: names.toUpstream(tool.name),
        ...(tool.description !== undefined && { description: tool.description }),
        parameters: tool.input_schema,
      },
    }));
    if (request.tool_choice !== undefined) {
      body.tool_choice = toolChoiceFrom(request.tool_choice, names);
      // OpenAI refuses parallel_tool_calls without tools, and `none` carries no such flag.
      if (request.tool_choice.type !== 'none' && request.tool_choice.disable_parallel_tool_use === true) body.parallel_tool_calls = false;
    }
  }
  if (request.stop_sequences !== undefined && request.stop_sequences.length > 0) body.stop = request.stop_sequences;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.top_p !== undefined) body.top_p = request.top_p;
  if (request.metadata?.user_id !== undefined) body.user = request.metadata.user_id;
  const responseFormat = responseFormatFromOutputConfig((request as { output_config?: unknown }).output_config, context);
  if (responseFormat !== undefined) body.response_format = responseFormat;
  if (request.stream === true) {
    body.stream = true;
    // Without it OpenAI streams carry no usage, and message_delta could not report any.
    body.stream_options = { include_usage: true };
  }
  return body;
}
