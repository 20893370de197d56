// Both suppliers' protocols refuse a conversation whose tool calls and results do not pair up
// (docs/interfaces.md, translation rule 2): each direction repairs it with the same words.

/** Text sent for a tool call the client never answered. */
export const missingToolResultText = 'No result was provided for this tool call.';

/** A tool result that answers no call of the turn before it, kept as plain text. */
export function strayToolResultText(toolCallId: string, result: string): string {
  return `Tool result for ${toolCallId}: ${result}`;
}
