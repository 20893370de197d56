// OpenAI message content (a string or typed parts) → Anthropic content blocks.
import { ApiError } from '../../../../core/errors/index.js';
import type { ChatMessage } from '../../interfaces/chat-completions/schema.js';
import type { ContentBlock } from '../../interfaces/messages/schema.js';
import { imageUrlProblem, isHttpUrl, parseDataUrl } from '../../interfaces/image-source.js';

/** Message content as an OpenAI client may send it (assistant content may also be null). */
export type ChatContent = NonNullable<ChatMessage['content']>;
/** One typed part of OpenAI message content. */
type ChatPart = Extract<ChatContent, readonly unknown[]>[number];
/** An Anthropic text block. */
export type TextBlock = Extract<ContentBlock, { type: 'text' }>;

const imageMediaTypes = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;
type ImageMediaType = (typeof imageMediaTypes)[number];

function isImageMediaType(value: string): value is ImageMediaType {
  return (imageMediaTypes as readonly string[]).includes(value);
}

/** True when text would be refused by Anthropic ("text content blocks must contain non-whitespace text"). */
export function isBlankText(text: string): boolean {
  return text.trim() === '';
}

/** A text block, or nothing for blank text (pitfall 4: empty text blocks are rejected). */
export function textBlocks(text: string): TextBlock[] {
  return isBlankText(text) ? [] : [{ type: 'text', text }];
}

function unsupported(param: string, humanMessage: string): ApiError {
  return new ApiError('unsupported_parameter', { param, humanMessage });
}

/** An `image_url` part: data URLs become base64 sources (PDFs become documents), http(s) URLs url sources. */
function imageBlock(url: string, param: string): ContentBlock {
  // The chat schema has checked the URL already (interfaces/image-source.ts); kept for any other caller.
  const problem = imageUrlProblem(url);
  if (problem !== undefined) throw new ApiError('validation_error', { param, humanMessage: `Invalid value for "${param}": ${problem}` });
  if (url.startsWith('data:')) {
    const parsed = parseDataUrl(url)!;
    if (parsed.mediaType === 'application/pdf') {
      return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: parsed.data } };
    }
    if (!isImageMediaType(parsed.mediaType)) {
      throw unsupported(param, `Image type ${parsed.mediaType} is not supported by this model; use JPEG, PNG, GIF or WebP`);
    }
    return { type: 'image', source: { type: 'base64', media_type: parsed.mediaType, data: parsed.data } };
  }
  if (isHttpUrl(url)) return { type: 'image', source: { type: 'url', url } };
  throw unsupported(param, 'Image URLs must be http(s) URLs or base64 data URLs');
}

/** A `file` part: only inline PDFs (`file_data` as a data URL) have an Anthropic equivalent. */
function fileBlock(part: ChatPart, param: string): ContentBlock {
  const file = (part as Record<string, unknown>).file;
  const fileData = typeof file === 'object' && file !== null ? (file as Record<string, unknown>).file_data : undefined;
  const parsed = typeof fileData === 'string' ? parseDataUrl(fileData) : undefined;
  if (parsed?.mediaType === 'application/pdf') {
    return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: parsed.data } };
  }
  throw unsupported(param, 'Only inline PDF files (file.file_data as a base64 data URL) can be sent to this model');
}

/** User content → text, image and document blocks, in order; blank text is left out. */
export function userContentBlocks(content: ChatContent, param: string): ContentBlock[] {
  if (typeof content === 'string') return textBlocks(content);
  const blocks: ContentBlock[] = [];
  for (const part of content) {
    switch (part.type) {
      case 'text':
        blocks.push(...textBlocks(part.text));
        break;
      case 'image_url':
        blocks.push(imageBlock(part.image_url.url, param));
        break;
      case 'file':
        blocks.push(fileBlock(part, param));
        break;
      case 'input_audio':
        throw unsupported(param, 'Audio input is not supported by this model');
      case 'refusal':
        blocks.push(...textBlocks(refusalText(part)));
        break;
      default: {
        const unknown: never = part;
        throw unsupported(param, `Unknown content part type ${JSON.stringify((unknown as { type?: unknown }).type)}`);
      }
    }
  }
  return blocks;
}

function refusalText(part: ChatPart): string {
  const refusal = (part as Record<string, unknown>).refusal;
  return typeof refusal === 'string' ? refusal : '';
}

/** The text pieces of content that can only hold text (system, developer, assistant, tool): images are refused. */
export function textPieces(content: ChatContent | null | undefined, param: string): string[] {
  if (content === null || content === undefined) return [];
  if (typeof content === 'string') return [content];
  return content.map((part) => {
    switch (part.type) {
      case 'text':
        return part.text;
      case 'refusal':
        return refusalText(part);
      case 'image_url':
      case 'file':
      case 'input_audio':
        throw unsupported(param, `A ${part.type} part is only allowed in user messages`);
      default: {
        const unknown: never = part;
        throw unsupported(param, `Unknown content part type ${JSON.stringify((unknown as { type?: unknown }).type)}`);
      }
    }
  });
}
