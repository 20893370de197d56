// The most input tokens a chat request can be charged — what its reservation assumes, and so what
// the charge is held to (routing/cost.ts, boundedUsage). A token covers at least one UTF-8 byte of
// text, so the body's bytes bound its text, tool definitions and schemas; an image can cost more
// tokens than its bytes (a URL is a few dozen bytes; a tiny image read at high detail still costs a
// tile), so each adds an allowance; a file or document (a PDF by id, URL or data, read page by page
// as images too) has no bound the request shows, so the model's context window bounds it.
// Without this cap a supplier reporting 1e20 prompt tokens was charged the whole context window on
// every call, while each call had reserved only its bytes: concurrent calls overspent a budget 84×.
import type { ChatCompletionRequest } from '../interfaces/chat-completions/schema.js';
import type { MessagesRequest } from '../interfaces/messages/schema.js';
import type { NativeResponsesRequest } from '../interfaces/native-responses/schema.js';

/**
 * Tokens one image may cost beyond its bytes: above the most any supplier charges for one image
 * today (OpenAI's patch-based models up to ~2,700 at full size, Anthropic ~1,600 at 1.15 MP).
 */
export const imageTokenAllowance = 3_000;

/** What a request's input holds beyond text: images (each bounded) and any file or document (unbounded). */
interface Media {
  images: number;
  unbounded: boolean;
}

/** The request's cap: its bytes plus each image's allowance; none (the context window) when it holds a file or document. */
function capOf(bytes: number, media: Media): number | undefined {
  return media.unbounded ? undefined : bytes + media.images * imageTokenAllowance;
}

/** An OpenAI chat request: `image_url` parts are images, `file` parts unbounded; `input_audio` is base64, its bytes bound it. */
export function chatInputCap(request: ChatCompletionRequest, bytes: number): number | undefined {
  const media: Media = { images: 0, unbounded: false };
  for (const message of request.messages) {
    const content = message.content;
    if (!Array.isArray(content)) continue;
    for (const part of content as readonly { type: string }[]) {
      if (part.type === 'image_url') media.images++;
      else if (part.type === 'file') media.unbounded = true;
    }
  }
  return capOf(bytes, media);
}

type MessagesBlock = { type: string; source?: { type?: unknown }; content?: unknown };

function countMessagesBlocks(blocks: readonly MessagesBlock[], media: Media): void {
  for (const block of blocks) {
    if (block.type === 'image') media.images++;
    // A document given as text is bounded by its bytes; as a PDF (data, URL or file id) it is not.
    else if (block.type === 'document') {
      const source = block.source?.type;
      if (source !== 'text' && source !== 'content') media.unbounded = true;
    } else if (block.type === 'tool_result' && Array.isArray(block.content)) countMessagesBlocks(block.content as MessagesBlock[], media);
  }
}

/** An Anthropic messages request: `image` blocks are images, PDF `document` blocks unbounded, tool results included. */
export function messagesInputCap(request: MessagesRequest, bytes: number): number | undefined {
  const media: Media = { images: 0, unbounded: false };
  for (const message of request.messages) {
    if (Array.isArray(message.content)) countMessagesBlocks(message.content as MessagesBlock[], media);
  }
  return capOf(bytes, media);
}

/** A native Responses request: `input_image` parts are images, `input_file` parts unbounded. */
export function responsesInputCap(request: NativeResponsesRequest, bytes: number): number | undefined {
  const media: Media = { images: 0, unbounded: false };
  for (const item of request.input) {
    const parts = 'content' in item ? item.content : 'output' in item ? item.output : undefined;
    if (!Array.isArray(parts)) continue;
    for (const part of parts as readonly { type: string }[]) {
      if (part.type === 'input_image') media.images++;
      else if (part.type === 'input_file') media.unbounded = true;
    }
  }
  return capOf(bytes, media);
}
