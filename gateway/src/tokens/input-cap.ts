// The most input tokens a chat request can be charged — what its reservation assumes, and so what
// the charge is held to (routing/cost.ts, boundedUsage). A token covers at least one UTF-8 byte of
// text, so the body's bytes bound its text, tool definitions and schemas; an image can cost more
// tokens than its bytes (a URL is a few dozen bytes; a tiny image read at high detail still costs a
// tile), so each adds an allowance; tool definitions and response schemas add what suppliers wrap
// them in (Anthropic's tool-use system prompt, the JSON-mode tool of a translation); and input the
// body only points at — a file or PDF document, an earlier response (`previous_response_id`), a
// stored prompt, tools the supplier runs itself (web search, code execution, MCP servers) — has no
// bound the request shows, so the model's context window bounds it.
// Without this cap a supplier reporting 1e20 prompt tokens was charged the whole context window on
// every call, while each call had reserved only its bytes: concurrent calls overspent a budget 84×.
import type { ChatCompletionRequest } from '../interfaces/chat-completions/schema.js';
import { isServerToolBlock, type MessagesRequest } from '../interfaces/messages/schema.js';
import type { NativeResponsesRequest } from '../interfaces/native-responses/schema.js';

/**
 * Tokens one image may cost beyond its bytes: above the most any supplier charges for one image
 * today (OpenAI's patch-based models up to ~3,800 at full size, Anthropic ~1,600 at 1.15 MP).
 */
export const imageTokenAllowance = 6_000;

/** Tokens a supplier may add around tool definitions or a response schema (system prompts, wrappers). */
export const toolsTokenAllowance = 2_000;

/** What a request's input holds beyond text: images (each bounded) and any file or document (unbounded). */
interface Media {
  images: number;
  unbounded: boolean;
}

/** The request's cap: its bytes plus each image's allowance and the tools' allowance; none (the context window) when unbounded. */
function capOf(bytes: number, media: Media, tools: boolean): number | undefined {
  return media.unbounded ? undefined : bytes + media.images * imageTokenAllowance + (tools ? toolsTokenAllowance : 0);
}

/** Whether a request names tools or a response format: what suppliers wrap them in is not in the body. */
const hasTools = (request: { tools?: unknown; response_format?: unknown; tool_choice?: unknown }) =>
  (Array.isArray(request.tools) && request.tools.length > 0) || request.response_format != null;

/** An OpenAI chat request: `image_url` parts are images, `file` parts unbounded; `input_audio` is base64, its bytes bound it. */
export function chatInputCap(request: ChatCompletionRequest, bytes: number): number | undefined {
  // Web search results are read by the supplier as input the body does not hold.
  const media: Media = { images: 0, unbounded: request.web_search_options != null };
  for (const message of request.messages) {
    const content = message.content;
    if (!Array.isArray(content)) continue;
    for (const part of content as readonly { type: string }[]) {
      if (part.type === 'image_url') media.images++;
      else if (part.type === 'file') media.unbounded = true;
    }
  }
  return capOf(bytes, media, hasTools(request));
}

type MessagesBlock = { type: string; source?: { type?: unknown; content?: unknown }; content?: unknown };

function countMessagesBlocks(blocks: readonly MessagesBlock[], media: Media): void {
  for (const block of blocks) {
    if (block.type === 'image') media.images++;
    // A document given as text is bounded by its bytes; as a PDF (data, URL or file id) it is not.
    else if (block.type === 'document') {
      const source = block.source?.type;
      if (source === 'content' && Array.isArray(block.source?.content)) countMessagesBlocks(block.source.content as MessagesBlock[], media);
      else if (source !== 'text') media.unbounded = true;
    } else if (block.type === 'tool_result' && Array.isArray(block.content)) countMessagesBlocks(block.content as MessagesBlock[], media);
    // A server tool's block (a container upload by file id, a fetched page): input the body does not hold.
    else if (isServerToolBlock(block)) media.unbounded = true;
  }
}

/** An Anthropic messages request: `image` blocks are images, PDF `document` blocks unbounded, tool results included. */
export function messagesInputCap(request: MessagesRequest, bytes: number): number | undefined {
  const loose = request as MessagesRequest & { mcp_servers?: unknown; container?: unknown };
  // Tools Anthropic defines and runs (web search, code execution, bash, computer use) and MCP
  // servers bring input of their own (results, tool prompts of ~1,000 tokens each).
  const runsTools =
    (request.tools ?? []).some(
      (tool) => (tool as { type?: unknown }).type !== undefined && (tool as { type?: unknown }).type !== 'custom',
    ) ||
    loose.mcp_servers != null ||
    loose.container != null;
  const media: Media = { images: 0, unbounded: runsTools };
  for (const message of request.messages) {
    if (Array.isArray(message.content)) countMessagesBlocks(message.content as MessagesBlock[], media);
  }
  return capOf(bytes, media, hasTools(request as { tools?: unknown }));
}

/** A native Responses request: `input_image` parts are images, `input_file` parts unbounded. */
export function responsesInputCap(request: NativeResponsesRequest, bytes: number): number | undefined {
  const loose = request as NativeResponsesRequest & {
    previous_response_id?: unknown;
    conversation?: unknown;
    prompt?: unknown;
    tools?: unknown;
  };
  // An earlier response or conversation, a stored prompt, or a tool the supplier runs itself
  // (file search, web search, code interpreter, MCP): input that lives at the supplier.
  const suppliedInput =
    loose.previous_response_id != null ||
    loose.conversation != null ||
    loose.prompt != null ||
    (Array.isArray(loose.tools) && loose.tools.some((tool) => (tool as { type?: unknown } | null)?.type !== 'function'));
  const media: Media = { images: 0, unbounded: suppliedInput };
  for (const item of request.input) {
    const parts = 'content' in item ? item.content : 'output' in item ? item.output : undefined;
    if (!Array.isArray(parts)) continue;
    for (const part of parts as readonly { type: string }[]) {
      if (part.type === 'input_image') media.images++;
      else if (part.type === 'input_file') media.unbounded = true;
    }
  }
  return capOf(bytes, media, hasTools(loose as { tools?: unknown }));
}
