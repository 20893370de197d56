// OpenAI chat-completions request → Anthropic messages request (docs/interfaces.md §Translation rules).
import { ApiError } from '../../../../core/errors/index.js';
import type { ChatCompletionRequest } from '../../interfaces/chat-completions/schema.js';
import type { MessagesRequest } from '../../interfaces/messages/schema.js';
import type { TranslationContext } from '../types.js';
import { convertMessages, servedByAnthropic } from './messages.js';
import { unhandledField } from '../shared/unhandled-fields.js';
import { functionToolsOf, type FunctionToolChoice } from '../shared/function-tools.js';

type AnthropicTool = NonNullable<MessagesRequest['tools']>[number];
type AnthropicToolChoice = NonNullable<MessagesRequest['tool_choice']>;

/** The forced tool that emulates OpenAI JSON mode: its input is the JSON answer. */
export const jsonToolName = 'json_tool_call';

/** The Anthropic body plus what the response side must remember about it. */
export interface AnthropicRequestPlan {
  body: MessagesRequest;
  /** True when JSON mode is emulated with the forced `json_tool_call` tool. */
  jsonMode: boolean;
}

const emptyObjectSchema = { type: 'object', properties: {} } as const;

function toolChoiceFrom(request: ChatCompletionRequest, choice: FunctionToolChoice | undefined): AnthropicToolChoice | undefined {
  const disableParallel = request.parallel_tool_calls === false;
  let mapped: AnthropicToolChoice | undefined;
  if (choice === undefined) mapped = disableParallel ? { type: 'auto' } : undefined;
  else if (typeof choice === 'string') {
    switch (choice) {
      case 'auto':
        mapped = { type: 'auto' };
        break;
      case 'required':
        mapped = { type: 'any' };
        break;
      case 'none':
        // `none` takes no parallel flag: no tool is called at all.
        return { type: 'none' };
      default: {
        const unknown: never = choice;
        throw new ApiError('unsupported_parameter', { param: 'tool_choice', humanMessage: `Unknown tool_choice ${String(unknown)}` });
      }
    }
  } else mapped = { type: 'tool', name: choice.function.name };
  if (mapped !== undefined && disableParallel) mapped.disable_parallel_tool_use = true;
  return mapped;
}

/** The JSON-mode tool for `response_format`, or undefined when plain text was asked for. */
function jsonModeTool(format: ChatCompletionRequest['response_format']): AnthropicTool | undefined {
  if (format === undefined) return undefined;
  switch (format.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return {
        name: jsonToolName,
        description: 'Respond with a JSON object.',
        input_schema: { type: 'object', additionalProperties: true },
      };
    case 'json_schema': {
      const schema = format.json_schema.schema;
      // OpenAI requires an object root for structured output; another root would be forced into
      // an object schema here and answered with "{}", so it is refused instead of changed.
      if (schema !== undefined && schema.type !== undefined && schema.type !== 'object') {
        throw new ApiError('unsupported_parameter', {
          param: 'response_format.json_schema.schema',
          humanMessage: `The schema's root must be an object (type "object"), as structured output requires; this one is ${JSON.stringify(schema.type)}`,
        });
      }
      return {
        name: jsonToolName,
        description: format.json_schema.description ?? `Respond with a JSON object matching the ${format.json_schema.name} schema.`,
        input_schema: schema !== undefined ? { ...schema, type: 'object' } : { type: 'object', additionalProperties: true },
      };
    }
    default: {
      const unknown: never = format;
      throw new ApiError('unsupported_parameter', {
        param: 'response_format',
        humanMessage: `Unknown response_format type ${JSON.stringify((unknown as { type?: unknown }).type)}`,
      });
    }
  }
}

/** max_tokens for Anthropic, which requires it: the client's, else the default capped at the model's maximum. */
function maxTokensFor(request: ChatCompletionRequest, context: TranslationContext): number {
  const asked = request.max_completion_tokens ?? request.max_tokens;
  if (asked !== null && asked !== undefined) return asked;
  const modelMax = context.route.model.maxOutputTokens;
  return modelMax === undefined ? context.defaultMaxTokens : Math.min(context.defaultMaxTokens, modelMax);
}

/**
 * The chat fields this translation maps, refuses by value below, or knows to be hints it may leave
 * out (`seed`, `prompt_cache_key`, `prompt_cache_retention`, `safety_identifier`, `service_tier`,
 * OpenAI's stored-completion `metadata`, and `reasoning_effort` as docs/interfaces.md explains);
 * `top_k` (vLLM's extension) is carried over; `modalities: ["text"]` passes as a spelled-out default. Any other field that asks for
 * something is refused (shared/unhandled-fields.ts): `functions`, `web_search_options`,
 * `verbosity`, `store: true`, and whatever OpenAI adds next.
 */
const handledFields: ReadonlySet<string> = new Set([
  'model',
  'messages',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'n',
  'stop',
  'region',
  'metadata',
  'user',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'response_format',
  'seed',
  'frequency_penalty',
  'presence_penalty',
  'logprobs',
  'top_logprobs',
  'logit_bias',
  'reasoning_effort',
  'prompt_cache_key',
  'prompt_cache_retention',
  'safety_identifier',
  'service_tier',
  'top_k',
]);

/**
 * One rule for OpenAI parameters an Anthropic-protocol supplier has no equivalent for
 * (docs/interfaces.md "Parameters across families"): a value that asks for behaviour the target
 * cannot give is refused with `400 unsupported_parameter` naming it — never silently changed —
 * and a value that asks for nothing (the default: n 1, penalties 0, no logprobs, an empty
 * logit_bias) is accepted and left out. `seed` is a best-effort hint no supplier guarantees, so
 * it is always left out.
 */
function refuseWhatCannotBeHonoured(request: ChatCompletionRequest): void {
  const refuse = (param: string, humanMessage: string): never => {
    throw new ApiError('unsupported_parameter', { param, humanMessage });
  };
  const unhandled = unhandledField(request, handledFields);
  if (unhandled !== undefined)
    refuse(
      unhandled,
      unhandled === 'functions' || unhandled === 'function_call'
        ? `This model is served through an Anthropic-protocol supplier, which takes tools, not the legacy ${unhandled}: send "tools" and "tool_choice" instead`
        : `This model is served through an Anthropic-protocol supplier, which has no ${unhandled}; omit it`,
    );
  const set = <T>(value: T | null | undefined): value is T => value !== undefined && value !== null;
  if (set(request.n) && request.n !== 1)
    refuse('n', 'This model returns one choice per request; send n=1 (or omit n) and make several requests instead');
  if (set(request.temperature) && request.temperature > 1) {
    refuse('temperature', `This model accepts temperature from 0 to 1; ${request.temperature} cannot be honoured (send at most 1)`);
  }
  for (const param of ['frequency_penalty', 'presence_penalty'] as const) {
    const value = request[param];
    if (set(value) && value !== 0) refuse(param, `This model has no ${param}; send 0 or omit it`);
  }
  if (request.logprobs === true || (set(request.top_logprobs) && request.top_logprobs > 0)) {
    refuse(
      request.logprobs === true ? 'logprobs' : 'top_logprobs',
      'This model does not return log probabilities; omit logprobs and top_logprobs',
    );
  }
  const bias = (request as { logit_bias?: unknown }).logit_bias;
  if (bias !== null && typeof bias === 'object' && Object.keys(bias).length > 0)
    refuse('logit_bias', 'This model does not take a logit_bias; omit it');
}

/** Builds the Anthropic request; throws `unsupported_parameter` for what Anthropic cannot express. */
export function anthropicRequestFrom(request: ChatCompletionRequest, context: TranslationContext): AnthropicRequestPlan {
  refuseWhatCannotBeHonoured(request);
  const conversation = convertMessages(request.messages);
  const body: MessagesRequest = {
    model: context.route.model.upstream,
    max_tokens: maxTokensFor(request, context),
    messages: conversation.turns,
  };
  if (conversation.system.length > 0) body.system = conversation.system;

  // Tools: the client's, plus a minimal definition per name the history uses when the client
  // sent none, because Anthropic rejects tool blocks in a request without tools (pitfall 3).
  const functions = functionToolsOf(request, servedByAnthropic);
  const tools: AnthropicTool[] = functions.tools.map((tool) => ({
    name: tool.function.name,
    ...(tool.function.description !== undefined && { description: tool.function.description }),
    input_schema: { ...(tool.function.parameters ?? emptyObjectSchema), type: 'object' },
  }));
  if (tools.length === 0) {
    for (const name of conversation.toolNamesInHistory) tools.push({ name, input_schema: { ...emptyObjectSchema } });
  }
  let toolChoice = tools.length > 0 ? toolChoiceFrom(request, functions.toolChoice) : undefined;
  const jsonTool = jsonModeTool(request.response_format);
  if (jsonTool !== undefined) {
    // The JSON answer is emulated by forcing the JSON tool: a call the client forced too cannot also be made.
    if (request.tool_choice === 'required' || typeof request.tool_choice === 'object') {
      throw new ApiError('unsupported_parameter', {
        param: 'tool_choice',
        humanMessage:
          'An Anthropic-protocol supplier cannot both force a tool call and answer in the JSON of response_format: drop one of them',
      });
    }
    // Forcing the JSON tool overrides an `auto` tool_choice: the reply must be the JSON.
    tools.push(jsonTool);
    toolChoice = { type: 'tool', name: jsonToolName };
  }
  if (tools.length > 0) body.tools = tools;
  if (toolChoice !== undefined) body.tool_choice = toolChoice;

  if (request.stop !== undefined && request.stop !== null) {
    const stops = (typeof request.stop === 'string' ? [request.stop] : request.stop).filter((stop) => stop !== '');
    if (stops.length > 0) body.stop_sequences = stops;
  }
  if (request.temperature !== undefined && request.temperature !== null) body.temperature = request.temperature;
  // Newer Anthropic models refuse temperature and top_p together (LiteLLM #15097); OpenAI
  // clients often send top_p: 1, which samples from everything anyway, so that one is left out.
  const topPIsNoOp = request.top_p === 1 && body.temperature !== undefined;
  if (request.top_p !== undefined && request.top_p !== null && !topPIsNoOp) body.top_p = request.top_p;
  // top_k is no OpenAI field, but OpenAI-compatible clients send it (vLLM's extension), and Anthropic has it.
  const topK = (request as { top_k?: unknown }).top_k;
  if (typeof topK === 'number' && Number.isInteger(topK) && topK > 0) body.top_k = topK;
  else if (topK !== undefined && topK !== null)
    throw new ApiError('unsupported_parameter', { param: 'top_k', humanMessage: 'top_k must be a whole number above 0' });
  if (request.user !== undefined) body.metadata = { user_id: request.user };
  if (request.stream === true) body.stream = true;
  return { body, jsonMode: jsonTool !== undefined };
}
