import { describe, expect, it } from 'vitest';
import type { ChatCompletionRequest } from '../interfaces/chat-completions/schema.js';
import type { MessagesRequest } from '../interfaces/messages/schema.js';
import type { NativeResponsesRequest } from '../interfaces/native-responses/schema.js';
import { chatInputCap, imageTokenAllowance, messagesInputCap, responsesInputCap, toolsTokenAllowance } from './input-cap.js';

const chat = (content: unknown) => ({ model: 'm', messages: [{ role: 'user', content }] }) as unknown as ChatCompletionRequest;
const messages = (content: unknown) => ({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content }] }) as unknown as MessagesRequest;
const responses = (content: unknown) => ({ model: 'm', input: [{ role: 'user', content }] }) as unknown as NativeResponsesRequest;

describe('the most input tokens a request can amount to', () => {
  it('is its bytes for text, plus an allowance per image; none (the window) with a file', () => {
    expect(chatInputCap(chat('hello'), 100)).toBe(100);
    const image = { type: 'image_url', image_url: { url: 'https://x/y.png' } };
    expect(chatInputCap(chat([{ type: 'text', text: 'hi' }, image, image]), 100)).toBe(100 + 2 * imageTokenAllowance);
    expect(chatInputCap(chat([{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }]), 100)).toBe(100);
    expect(chatInputCap(chat([image, { type: 'file', file: { file_id: 'f' } }]), 100)).toBeUndefined();
  });

  it('counts Anthropic images in tool results too; a document is bounded only when it is text', () => {
    const image = { type: 'image', source: { type: 'url', url: 'https://x/y.png' } };
    expect(messagesInputCap(messages([{ type: 'tool_result', tool_use_id: 't', content: [image] }, image]), 10)).toBe(
      10 + 2 * imageTokenAllowance,
    );
    expect(messagesInputCap(messages([{ type: 'document', source: { type: 'text', data: 'plain' } }]), 10)).toBe(10);
    expect(messagesInputCap(messages([{ type: 'document', source: { type: 'base64', data: 'JVBE' } }]), 10)).toBeUndefined();
    expect(messagesInputCap(messages('hello'), 10)).toBe(10);
  });

  it('reads native input items and function outputs', () => {
    expect(responsesInputCap(responses([{ type: 'input_image', image_url: 'https://x' }]), 5)).toBe(5 + imageTokenAllowance);
    expect(responsesInputCap(responses([{ type: 'input_file', file_id: 'f' }]), 5)).toBeUndefined();
    const output = { model: 'm', input: [{ type: 'function_call_output', call_id: 'c', output: [{ type: 'input_image' }] }] };
    expect(responsesInputCap(output as unknown as NativeResponsesRequest, 5)).toBe(5 + imageTokenAllowance);
  });

  it('adds an allowance for tools and response formats, and is none where input lives at the supplier', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: {} } }];
    expect(chatInputCap({ ...chat('hi'), tools } as unknown as ChatCompletionRequest, 50)).toBe(50 + toolsTokenAllowance);
    expect(chatInputCap({ ...chat('hi'), response_format: { type: 'json_object' } } as unknown as ChatCompletionRequest, 50)).toBe(
      50 + toolsTokenAllowance,
    );
    expect(chatInputCap({ ...chat('hi'), web_search_options: {} } as unknown as ChatCompletionRequest, 50)).toBeUndefined();
    const search = { type: 'web_search_20250305', name: 'web_search' };
    expect(messagesInputCap({ ...messages('hi'), tools: [search] } as unknown as MessagesRequest, 50)).toBeUndefined();
    expect(messagesInputCap({ ...messages('hi'), mcp_servers: [{ url: 'https://x' }] } as unknown as MessagesRequest, 50)).toBeUndefined();
    const custom = { name: 'f', input_schema: { type: 'object' } };
    expect(messagesInputCap({ ...messages('hi'), tools: [custom] } as unknown as MessagesRequest, 50)).toBe(50 + toolsTokenAllowance);
    expect(messagesInputCap(messages([{ type: 'container_upload', file_id: 'f' }]), 50)).toBeUndefined();
    const imageDocument = {
      type: 'document',
      source: { type: 'content', content: [{ type: 'image', source: { type: 'url', url: 'https://x' } }] },
    };
    expect(messagesInputCap(messages([imageDocument]), 50)).toBe(50 + imageTokenAllowance);
    expect(
      responsesInputCap({ ...responses('hi'), previous_response_id: 'resp_1' } as unknown as NativeResponsesRequest, 5),
    ).toBeUndefined();
    expect(
      responsesInputCap({ ...responses('hi'), tools: [{ type: 'file_search' }] } as unknown as NativeResponsesRequest, 5),
    ).toBeUndefined();
    expect(
      responsesInputCap({ ...responses('hi'), tools: [{ type: 'function', name: 'f' }] } as unknown as NativeResponsesRequest, 5),
    ).toBe(5 + toolsTokenAllowance);
  });
});
