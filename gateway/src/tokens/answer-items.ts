// What a supplier's answer is made of, for counting its output tokens when the supplier reported
// none (gateway/src/pipeline/charged-usage.ts). Read off the wire the supplier spoke, whole answer
// or stream events, defensively: an answer without usage is already off-contract, so any field
// may be missing or of the wrong type, and what cannot be read counts nothing rather than throwing.

/**
 * The wire formats answers are read in: chat answers in OpenAI chat or Anthropic form (an
 * `openai-responses` answer to a chat client is bridged to chat first), and the native lane's
 * Responses stream.
 */
export type AnswerWire = 'openai-chat' | 'anthropic' | 'openai-responses';

type Loose = Record<string, unknown>;

function isObject(value: unknown): value is Loose {
  return typeof value === 'object' && value !== null;
}

function* strings(...values: unknown[]): Generator<string> {
  for (const value of values) if (typeof value === 'string' && value !== '') yield value;
}

function* list(value: unknown): Generator<Loose> {
  if (Array.isArray(value)) for (const item of value) if (isObject(item)) yield item;
}

/** One OpenAI chat message or stream delta: text, refusal, reasoning text some suppliers add, tool calls. */
function* openAiMessageItems(message: unknown): Generator<string> {
  if (!isObject(message)) return;
  yield* strings(message.content, message.refusal, message.reasoning_content, message.reasoning);
  for (const call of list(message.tool_calls)) {
    const fn = call.function;
    if (isObject(fn)) yield* strings(fn.name, fn.arguments);
  }
}

/** An OpenAI chat completion (whole) or one chunk of its stream. */
function* openAiChatItems(answer: unknown): Generator<string> {
  if (!isObject(answer)) return;
  for (const choice of list(answer.choices)) {
    yield* openAiMessageItems(choice.message);
    yield* openAiMessageItems(choice.delta);
  }
}

/** An Anthropic content block as the whole answer or `content_block_start` carries it. */
function* anthropicBlockItems(block: Loose): Generator<string> {
  yield* strings(block.text, block.thinking);
  if (block.type === 'tool_use' || block.type === 'server_tool_use') {
    yield* strings(block.name);
    // In a stream the input arrives as input_json_delta; a start block carries `{}`.
    if (isObject(block.input) && Object.keys(block.input).length > 0) yield JSON.stringify(block.input);
  }
}

/** An Anthropic message (whole) or one event of its stream. */
function* anthropicItems(answer: unknown): Generator<string> {
  if (!isObject(answer)) return;
  for (const block of list(answer.content)) yield* anthropicBlockItems(block);
  if (isObject(answer.content_block)) yield* anthropicBlockItems(answer.content_block);
  const delta = answer.delta;
  if (answer.type === 'content_block_delta' && isObject(delta)) yield* strings(delta.text, delta.partial_json, delta.thinking);
}

/** Responses stream events whose `delta` is generated text: answer, refusal, tool arguments, reasoning. */
const responsesTextDeltas = new Set([
  'response.output_text.delta',
  'response.refusal.delta',
  'response.function_call_arguments.delta',
  'response.reasoning_text.delta',
  'response.reasoning_summary_text.delta',
]);

/** One event of a Responses stream (the native lane passes them through untouched). */
function* responsesEventItems(event: unknown): Generator<string> {
  if (!isObject(event)) return;
  if (typeof event.type === 'string' && responsesTextDeltas.has(event.type)) yield* strings(event.delta);
  if (event.type === 'response.output_item.added' && isObject(event.item) && event.item.type === 'function_call')
    yield* strings(event.item.name);
}

const readers: Record<AnswerWire, (answer: unknown) => Generator<string>> = {
  'openai-chat': openAiChatItems,
  anthropic: anthropicItems,
  'openai-responses': responsesEventItems,
};

/** What the answer's output tokens are made of: the whole answer's JSON, or each stream event's data in order. */
export function* answerItems(wire: AnswerWire, answer: { whole?: unknown; events: readonly string[] }): Generator<string> {
  const read = readers[wire];
  if (answer.whole !== undefined) yield* read(answer.whole);
  for (const data of answer.events) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      continue; // `[DONE]`, or a frame the translator refused already
    }
    yield* read(parsed);
  }
}
