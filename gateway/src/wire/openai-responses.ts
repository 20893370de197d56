// Wire types of the OpenAI Responses API as suppliers return them (the parts the chat bridge
// reads: output items, status, usage, errors). Requests are built as plain objects.

/** Usage of a response. */
export interface ResponsesUsage {
  input_tokens?: number;
  output_tokens?: number;
  total_tokens?: number;
  input_tokens_details?: { cached_tokens?: number } | null;
  output_tokens_details?: { reasoning_tokens?: number } | null;
}

/** A content part of an output message. */
export type ResponsesOutputPart = { type: 'output_text'; text: string } | { type: 'refusal'; refusal: string } | { type: string };

/** An output item: a message, a function call, or one the bridge skips (reasoning, built-in tools). */
export type ResponsesOutputItem =
  | { type: 'message'; id?: string; role?: 'assistant'; content?: ResponsesOutputPart[] }
  | { type: 'function_call'; id?: string; call_id: string; name: string; arguments: string }
  | { type: string };

/** A response object (the body of a non-streamed call, and inside terminal stream events). */
export interface ResponsesObject {
  id?: string;
  object?: 'response';
  created_at?: number;
  model?: string;
  status?: 'completed' | 'incomplete' | 'failed' | 'in_progress' | 'cancelled' | 'queued';
  error?: { code?: string | number | null; message?: string } | null;
  incomplete_details?: { reason?: string } | null;
  output?: ResponsesOutputItem[];
  usage?: ResponsesUsage | null;
}
