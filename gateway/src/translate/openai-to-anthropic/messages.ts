// OpenAI conversation → Anthropic system blocks and alternating user/assistant turns, with the
// tool_use/tool_result pairing Anthropic enforces (docs/interfaces.md §Translation rules 1, 2, 4, 5, 6).
import { missingToolResultText, strayToolResultText } from '../shared/tool-pairing.js';
import { notCarried } from '../shared/function-tools.js';
import { ApiError } from '../../../../core/errors/index.js';
import type { ChatMessage } from '../../interfaces/chat-completions/schema.js';
import type { ContentBlock } from '../../interfaces/messages/schema.js';
import { parseToolArguments } from '../shared/safe-json.js';
import { sanitizeToolId } from '../shared/tool-ids.js';
import { textBlocks, textPieces, userContentBlocks, type TextBlock } from './content.js';

/** How a refusal names where this translation sends the request (shared/function-tools.ts). */
export const servedByAnthropic = 'an Anthropic-protocol supplier';

type ToolResultBlock = Extract<ContentBlock, { type: 'tool_result' }>;
type ToolUseBlock = Extract<ContentBlock, { type: 'tool_use' }>;

/** One Anthropic turn: content is non-empty and, for users, tool results come first. */
// A type alias, not an interface: it must be assignable to the schema's loose message type.
export type AnthropicTurn = {
  role: 'user' | 'assistant';
  content: ContentBlock[];
};

/** The converted conversation, plus the tool names the history uses (for pitfall 3). */
export interface ConvertedConversation {
  system: TextBlock[];
  turns: AnthropicTurn[];
  toolNamesInHistory: string[];
}

/** A turn being built: tool results are kept apart so they can always lead the user turn. */
interface DraftTurn {
  role: 'user' | 'assistant';
  results: ToolResultBlock[];
  blocks: ContentBlock[];
  /**
   * How many of `blocks` came before each result in the conversation: a result that answers no
   * call becomes text, and goes back where it was among the turn's text, not first.
   */
  resultAt: number[];
}

export { missingToolResultText } from '../shared/tool-pairing.js';

function appendTurn(turns: DraftTurn[], role: DraftTurn['role'], results: ToolResultBlock[], blocks: ContentBlock[]): void {
  if (results.length === 0 && blocks.length === 0) return;
  const last = turns.at(-1);
  // Anthropic wants alternating roles and all results of one assistant turn in the next user
  // turn, so consecutive same-role messages (tool messages and the user text after them) merge.
  if (last !== undefined && last.role === role) {
    for (const result of results) {
      last.results.push(result);
      last.resultAt.push(last.blocks.length);
    }
    last.blocks.push(...blocks);
    return;
  }
  turns.push({ role, results: [...results], blocks: [...blocks], resultAt: results.map(() => 0) });
}

function assistantBlocks(message: Extract<ChatMessage, { role: 'assistant' }>, param: string, toolNames: Set<string>): ContentBlock[] {
  const blocks: ContentBlock[] = textPieces(message.content, `${param}.content`).flatMap(textBlocks);
  if (message.refusal) blocks.push(...textBlocks(message.refusal));
  for (const [j, call] of (message.tool_calls ?? []).entries()) {
    if (call.type !== 'function') throw notCarried(`${param}.tool_calls[${j}]`, `A call of a ${call.type} tool`, servedByAnthropic);
    toolNames.add(call.function.name);
    const toolUse: ToolUseBlock = {
      type: 'tool_use',
      id: sanitizeToolId(call.id),
      name: call.function.name,
      input: parseToolArguments(call.function.arguments),
    };
    blocks.push(toolUse);
  }
  return blocks;
}

function toolResult(message: Extract<ChatMessage, { role: 'tool' }>, param: string): ToolResultBlock {
  const block: ToolResultBlock = { type: 'tool_result', tool_use_id: sanitizeToolId(message.tool_call_id) };
  if (typeof message.content === 'string') {
    if (message.content !== '') block.content = message.content;
  } else {
    const texts = textPieces(message.content, `${param}.content`).flatMap(textBlocks);
    if (texts.length > 0) block.content = texts;
  }
  return block;
}

function toolUseIds(blocks: readonly ContentBlock[]): string[] {
  return blocks.flatMap((block) => (block.type === 'tool_use' ? [block.id] : []));
}

function resultText(result: ToolResultBlock): string {
  if (result.content === undefined) return '';
  if (typeof result.content === 'string') return result.content;
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
}

/**
 * Makes every assistant tool_use answered in the very next user turn (placeholders for orphaned
 * calls, pitfall 2) and turns results that answer no preceding tool_use into plain text, which
 * Anthropic would otherwise reject.
 */
function pairToolResults(turns: DraftTurn[]): void {
  for (let i = 0; i < turns.length; i++) {
    const turn = turns[i]!;
    if (turn.role === 'user') {
      const previous = turns[i - 1];
      const asked = new Set(previous?.role === 'assistant' ? toolUseIds(previous.blocks) : []);
      const seen = new Set<string>();
      const kept: ToolResultBlock[] = [];
      const stray: { at: number; blocks: ContentBlock[] }[] = [];
      turn.results.forEach((result, r) => {
        if (asked.has(result.tool_use_id) && !seen.has(result.tool_use_id)) {
          seen.add(result.tool_use_id);
          kept.push(result);
        } else {
          stray.push({ at: turn.resultAt[r] ?? 0, blocks: textBlocks(strayToolResultText(result.tool_use_id, resultText(result))) });
        }
      });
      turn.results = kept;
      turn.resultAt = kept.map(() => 0);
      // Back where each was: from the last position, so earlier positions still hold.
      for (const { at, blocks } of [...stray].reverse()) turn.blocks.splice(at, 0, ...blocks);
      continue;
    }
    const ids = toolUseIds(turn.blocks);
    if (ids.length === 0) continue;
    let next = turns[i + 1];
    if (next === undefined || next.role !== 'user') {
      next = { role: 'user', results: [], blocks: [], resultAt: [] };
      turns.splice(i + 1, 0, next);
    }
    const answered = new Set(next.results.map((result) => result.tool_use_id));
    for (const id of ids) {
      if (!answered.has(id)) next.results.push({ type: 'tool_result', tool_use_id: id, content: missingToolResultText });
    }
  }
}

/** Anthropic refuses a final assistant (prefill) turn that ends in whitespace. */
function trimFinalPrefill(turns: DraftTurn[]): void {
  const last = turns.at(-1);
  if (last?.role !== 'assistant') return;
  const block = last.blocks.at(-1);
  if (block?.type !== 'text') return;
  const trimmed = block.text.trimEnd();
  if (trimmed === '') last.blocks.pop();
  else block.text = trimmed;
  if (last.blocks.length === 0) turns.pop();
}

/** Converts OpenAI messages; system and developer messages anywhere become top-level system blocks, in order. */
export function convertMessages(messages: readonly ChatMessage[]): ConvertedConversation {
  const system: TextBlock[] = [];
  const drafts: DraftTurn[] = [];
  const toolNames = new Set<string>();
  messages.forEach((message, i) => {
    const param = `messages[${i}]`;
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(...textPieces(message.content, `${param}.content`).flatMap(textBlocks));
        break;
      case 'user':
        appendTurn(drafts, 'user', [], userContentBlocks(message.content, `${param}.content`));
        break;
      case 'assistant':
        appendTurn(drafts, 'assistant', [], assistantBlocks(message, param, toolNames));
        break;
      case 'tool':
        appendTurn(drafts, 'user', [toolResult(message, param)], []);
        break;
      case 'function':
        throw notCarried(param, 'A legacy function-role message (send a tool message with its tool_call_id)', servedByAnthropic);
      default: {
        const unknown: never = message;
        throw new ApiError('validation_error', {
          param,
          humanMessage: `Unknown message role ${JSON.stringify((unknown as { role?: unknown }).role)}`,
        });
      }
    }
  });
  pairToolResults(drafts);
  trimFinalPrefill(drafts);
  if (drafts.length === 0) {
    throw new ApiError('validation_error', {
      param: 'messages',
      humanMessage: 'At least one user or assistant message with non-empty content is required',
    });
  }
  const turns = drafts.map((draft) => ({ role: draft.role, content: [...draft.results, ...draft.blocks] }));
  return { system, turns, toolNamesInHistory: [...toolNames] };
}
