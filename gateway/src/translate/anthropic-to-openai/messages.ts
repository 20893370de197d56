// Anthropic conversation → OpenAI messages: tool results become `tool` messages placed before
// any other user content (OpenAI rejects a user message between tool_calls and their results).
import { ApiError } from '../../../../core/errors/index.js';
import type { ChatMessage } from '../../interfaces/chat-completions/schema.js';
import { isServerToolBlock, type ContentBlock, type MessagesRequest } from '../../interfaces/messages/schema.js';
import { isJsonObject } from '../shared/safe-json.js';
import { missingToolResultText, strayToolResultText } from '../shared/tool-pairing.js';
import { sanitizeToolId } from '../shared/tool-ids.js';
import type { ToolNameMap } from './tool-names.js';

type UserMessage = Extract<ChatMessage, { role: 'user' }>;
type ContentPart = Extract<UserMessage['content'], readonly unknown[]>[number];
type AnthropicMessage = MessagesRequest['messages'][number];
type ToolResultBlock = Extract<ContentBlock, { type: 'tool_result' }>;
type ToolCall = NonNullable<Extract<ChatMessage, { role: 'assistant' }>['tool_calls']>[number];

/** Prefix that tells the model a tool result reports a failure (OpenAI has no is_error flag). */
export const toolErrorPrefix = 'Error: ';

/** The system prompt as the first system message; text blocks are joined with blank lines. */
export function systemMessage(system: MessagesRequest['system']): ChatMessage | undefined {
  if (system === undefined) return undefined;
  const text =
    typeof system === 'string'
      ? system
      : system
          .map((block) => block.text)
          .filter((t) => t !== '')
          .join('\n\n');
  return text === '' ? undefined : { role: 'system', content: text };
}

function unsupported(param: string, humanMessage: string): ApiError {
  return new ApiError('unsupported_parameter', { param, humanMessage });
}

/** A block of a tool Anthropic runs itself: nothing an OpenAI-protocol supplier could read. */
function serverToolRefusal(param: string, type: string): ApiError {
  return unsupported(
    param,
    `A ${type} block comes from a tool Anthropic runs itself; only an Anthropic-protocol supplier can continue that conversation`,
  );
}

/** A search result as text the model can read and cite: its title, source and content. */
function searchResultText(block: Extract<ContentBlock, { type: 'search_result' }>): string {
  return [`${block.title} (${block.source})`, ...block.content.map((part) => part.text)].join('\n');
}

function imagePart(block: Extract<ContentBlock, { type: 'image' }>): ContentPart {
  const source = block.source;
  switch (source.type) {
    case 'base64':
      return { type: 'image_url', image_url: { url: `data:${source.media_type};base64,${source.data}` } };
    case 'url':
      return { type: 'image_url', image_url: { url: source.url } };
    default: {
      const unknown: never = source;
      throw unsupported('messages', `Unknown image source type ${JSON.stringify((unknown as { type?: unknown }).type)}`);
    }
  }
}

/** A document block: inline PDFs become file parts, plain-text documents text parts. */
function documentPart(block: Extract<ContentBlock, { type: 'document' }>, param: string): ContentPart {
  const source: Record<string, unknown> = block.source;
  if (source.type === 'base64' && source.media_type === 'application/pdf' && typeof source.data === 'string') {
    return { type: 'file', file: { filename: 'document.pdf', file_data: `data:application/pdf;base64,${source.data}` } };
  }
  if (source.type === 'text' && typeof source.data === 'string') return { type: 'text', text: source.data };
  throw unsupported(param, 'Only base64 PDF and plain-text documents can be sent to this model');
}

/** A tool result → the `tool` message, plus parts (images, documents) that must travel in a user message. */
function toolMessage(block: ToolResultBlock, param: string): { message: ChatMessage; media: ContentPart[] } {
  const texts: string[] = [];
  const media: ContentPart[] = [];
  if (typeof block.content === 'string') texts.push(block.content);
  else {
    for (const inner of block.content ?? []) {
      switch (inner.type) {
        case 'text':
          texts.push(inner.text);
          break;
        case 'image':
          media.push(imagePart(inner));
          break;
        case 'document':
          media.push(documentPart(inner, param));
          break;
        case 'search_result':
          texts.push(searchResultText(inner));
          break;
        default: {
          const unknown: never = inner;
          void unknown;
        }
      }
    }
  }
  let content = texts.join('\n');
  if (block.is_error === true) content = `${toolErrorPrefix}${content}`;
  const id = sanitizeToolId(block.tool_use_id);
  if (media.length > 0) {
    // OpenAI tool messages hold text only: say where the trailing images came from.
    media.unshift({ type: 'text', text: `Attachments returned by tool call ${id}:` });
  }
  return { message: { role: 'tool', tool_call_id: id, content }, media };
}

/** A user turn: `tool` messages first, then one user message with the rest and any tool attachments. */
function userMessages(content: AnthropicMessage['content'], param: string): ChatMessage[] {
  if (typeof content === 'string') return content === '' ? [] : [{ role: 'user', content }];
  const tools: ChatMessage[] = [];
  const parts: ContentPart[] = [];
  const attachments: ContentPart[] = [];
  content.forEach((block, j) => {
    const blockParam = `${param}.content[${j}]`;
    if (isServerToolBlock(block)) throw serverToolRefusal(blockParam, block.type);
    switch (block.type) {
      case 'text':
        if (block.text !== '') parts.push({ type: 'text', text: block.text });
        break;
      case 'image':
        parts.push(imagePart(block));
        break;
      case 'document':
        parts.push(documentPart(block, blockParam));
        break;
      case 'tool_result': {
        const converted = toolMessage(block, blockParam);
        tools.push(converted.message);
        attachments.push(...converted.media);
        break;
      }
      case 'tool_use':
        throw new ApiError('validation_error', { param: blockParam, humanMessage: 'tool_use blocks belong in assistant messages' });
      case 'thinking':
      case 'redacted_thinking':
        break; // reasoning of earlier turns has no OpenAI form
      case 'search_result':
        parts.push({ type: 'text', text: searchResultText(block) });
        break;
      default: {
        const unknown: never = block;
        throw unsupported(blockParam, `Unknown content block type ${JSON.stringify((unknown as { type?: unknown }).type)}`);
      }
    }
  });
  const all = [...parts, ...attachments];
  if (all.length === 0) return tools;
  // A lone text part goes as a plain string: the form every OpenAI-compatible supplier accepts.
  const only = all.length === 1 ? all[0] : undefined;
  const userContent = only?.type === 'text' ? only.text : all;
  return [...tools, { role: 'user', content: userContent }];
}

/** An assistant turn: text joined into content, tool_use blocks as tool_calls; thinking dropped. */
function assistantMessage(content: AnthropicMessage['content'], names: ToolNameMap, param: string): ChatMessage | undefined {
  if (typeof content === 'string') return content === '' ? undefined : { role: 'assistant', content };
  const texts: string[] = [];
  const toolCalls: ToolCall[] = [];
  for (const [j, block] of content.entries()) {
    if (block.type === 'text') texts.push(block.text);
    else if (isServerToolBlock(block)) throw serverToolRefusal(`${param}.content[${j}]`, block.type);
    else if (block.type === 'tool_use') {
      toolCalls.push({
        id: sanitizeToolId(block.id),
        type: 'function',
        function: { name: names.toUpstream(block.name), arguments: JSON.stringify(isJsonObject(block.input) ? block.input : {}) },
      });
    }
    // thinking, redacted_thinking: no OpenAI form; images and documents are not valid here.
  }
  const text = texts.join('');
  if (text === '' && toolCalls.length === 0) return undefined;
  return { role: 'assistant', content: text === '' ? null : text, ...(toolCalls.length > 0 && { tool_calls: toolCalls }) };
}

/**
 * Makes the `tool` messages pair with the tool calls right before them, as OpenAI requires
 * (translation rule 2): a result answering no call of the preceding assistant message (or
 * answering one twice) becomes user text, and a call left unanswered gets a placeholder result.
 */
function pairToolMessages(messages: ChatMessage[]): ChatMessage[] {
  const paired: ChatMessage[] = [];
  // The calls asked, as a set (in their order, which their placeholders follow): a turn may hold
  // tens of thousands of calls, and a look-up in a list per result made the turn quadratic.
  let asked = new Set<string>();
  const answered = new Set<string>();
  const closeTurn = () => {
    for (const id of asked) if (!answered.has(id)) paired.push({ role: 'tool', tool_call_id: id, content: missingToolResultText });
    asked = new Set();
    answered.clear();
  };
  for (const message of messages) {
    if (message.role === 'tool') {
      if (asked.has(message.tool_call_id) && !answered.has(message.tool_call_id)) {
        answered.add(message.tool_call_id);
        paired.push(message);
      } else {
        const text = typeof message.content === 'string' ? message.content : message.content.map((part) => part.text).join('\n');
        paired.push({ role: 'user', content: strayToolResultText(message.tool_call_id, text) });
      }
      continue;
    }
    closeTurn();
    paired.push(message);
    if (message.role === 'assistant' && message.tool_calls) asked = new Set(message.tool_calls.map((call) => call.id));
  }
  closeTurn();
  return paired;
}

/** Converts the Anthropic messages, in order, with tool calls and results paired. */
export function convertMessages(messages: readonly AnthropicMessage[], names: ToolNameMap): ChatMessage[] {
  return pairToolMessages(convertMessagesInOrder(messages, names));
}

function convertMessagesInOrder(messages: readonly AnthropicMessage[], names: ToolNameMap): ChatMessage[] {
  return messages.flatMap((message, i): ChatMessage[] => {
    const param = `messages[${i}]`;
    switch (message.role) {
      case 'user':
        return userMessages(message.content, param);
      case 'assistant': {
        const converted = assistantMessage(message.content, names, param);
        return converted === undefined ? [] : [converted];
      }
      default: {
        const unknown: never = message.role;
        throw new ApiError('validation_error', { param, humanMessage: `Unknown message role ${String(unknown)}` });
      }
    }
  });
}
