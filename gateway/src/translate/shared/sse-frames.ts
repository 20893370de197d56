// SSE framing differs by family (docs/interfaces.md §Streaming): the OpenAI SDK parses bare `data:` frames and
// stops at `[DONE]`; the Anthropic SDK silently drops any frame without an `event:` line.

/** A bare `data:` frame, as OpenAI chat-completion chunks travel. */
export function dataFrame(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

/** The OpenAI end-of-stream sentinel frame. */
export const doneFrame = 'data: [DONE]\n\n';

/** A named frame (`event:` + `data:`), as every Anthropic stream event travels. */
export function eventFrame(type: string, payload: unknown): string {
  return `event: ${type}\ndata: ${JSON.stringify(payload)}\n\n`;
}

/**
 * The stream's last line: a comment (`: ` line) with the call's totals as JSON. Every SSE parser
 * (both official SDKs, browsers' EventSource) ignores comments, so it is safe after the terminal
 * frame; a client reading the raw stream finds the totals there without HTTP trailers.
 */
export function totalsComment(totals: unknown): string {
  return `: svc-totals ${JSON.stringify(totals)}\n\n`;
}
