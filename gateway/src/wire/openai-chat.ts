// Wire types of OpenAI chat completions as suppliers return them (responses and stream chunks).
// Requests are typed by the zod schema in interfaces/chat-completions/schema.ts.

/** A tool call in a response message. */
export interface OpenAiToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** Usage block, with the optional detail objects. */
export interface OpenAiUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
  completion_tokens_details?: { reasoning_tokens?: number } | null;
}

/** `finish_reason` values. */
export type OpenAiFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call';

/** A non-streaming chat completion. */
export interface OpenAiChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: {
    index: number;
    message: { role: 'assistant'; content: string | null; refusal?: string | null; tool_calls?: OpenAiToolCall[] };
    logprobs: null;
    finish_reason: OpenAiFinishReason | null;
  }[];
  usage?: OpenAiUsage;
}

/** A tool-call fragment in a stream delta. */
export interface OpenAiToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

/** One `chat.completion.chunk`. */
export interface OpenAiChatChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: {
    index: number;
    delta: { role?: 'assistant'; content?: string | null; refusal?: string | null; tool_calls?: OpenAiToolCallDelta[] };
    logprobs?: null;
    finish_reason: OpenAiFinishReason | null;
  }[];
  usage?: OpenAiUsage | null;
}
