// Response and tool ids the gateway mints toward clients. Each family's SDKs and UIs expect its
// own prefixes, so the prefix says which family an id was made for.
import { randomUUID } from 'node:crypto';

/** 32 random hex characters. */
function randomHex(): string {
  return randomUUID().replace(/-/g, '');
}

/** An OpenAI chat completion id (`chatcmpl-…`). */
export function newChatCompletionId(): string {
  return `chatcmpl-${randomHex()}`;
}

/** An Anthropic message id (`msg_…`). */
export function newMessageId(): string {
  return `msg_${randomHex()}`;
}

/** An Anthropic tool-use id (`toolu_…`), for tool calls that arrived without an id. */
export function newToolUseId(): string {
  return `toolu_${randomHex()}`;
}

/** Unix time in whole seconds, as OpenAI's `created` field carries it. */
export function unixSeconds(now: number = Date.now()): number {
  return Math.floor(now / 1000);
}
