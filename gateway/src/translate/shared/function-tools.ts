// What a translation can carry of a chat request's tools: functions. OpenAI's other kinds — a
// `custom` tool, a `tool_choice` of `custom` or `allowed_tools`, the legacy `function` role — reach
// OpenAI-protocol suppliers as sent (openai-to-openai), and are refused here, naming them, for the
// suppliers of other protocols: dropped, they would change what the request asks.
import { ApiError } from '../../../../core/errors/index.js';
import { isFunctionTool, type ChatCompletionRequest, type FunctionTool } from '../../interfaces/chat-completions/schema.js';

/** A tool choice every protocol has: none, auto, required, or one function by name. */
export type FunctionToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

/** `unsupported_parameter` naming what the supplier's protocol (`served`, e.g. "an Anthropic-protocol supplier") cannot carry. */
export function notCarried(param: string, what: string, served: string): ApiError {
  return new ApiError('unsupported_parameter', {
    param,
    humanMessage: `${what} cannot be sent to this model: it is served through ${served}, which takes function tools only`,
  });
}

/** The request's tools and tool choice, when they are functions; else the refusal naming the first that is not. */
export function functionToolsOf(
  request: Pick<ChatCompletionRequest, 'tools' | 'tool_choice'>,
  served: string,
): { tools: FunctionTool[]; toolChoice: FunctionToolChoice | undefined } {
  const tools = (request.tools ?? []).map((tool, i) => {
    if (!isFunctionTool(tool)) throw notCarried(`tools[${i}]`, `A ${tool.type} tool`, served);
    return tool;
  });
  const choice = request.tool_choice;
  if (typeof choice === 'object' && choice.type !== 'function')
    throw notCarried('tool_choice', `A tool_choice of type ${choice.type}`, served);
  return { tools, toolChoice: choice as FunctionToolChoice | undefined };
}
