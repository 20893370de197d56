// Round trips generated requests through both translators (OpenAI → Anthropic → OpenAI and
// Anthropic → OpenAI → Anthropic) and checks that what both families can express keeps its
// meaning: system text, turns, tool calls and results, tools, tool choice and sampling fields.
import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import fc from 'fast-check';
import {
  chatCompletionRequest,
  isFunctionTool,
  type ChatCompletionRequest,
  type ChatMessage,
} from '../interfaces/chat-completions/schema.js';
import { messagesRequest, type MessagesRequest } from '../interfaces/messages/schema.js';
import { AnthropicToOpenAi } from './anthropic-to-openai/index.js';
import { OpenAiToAnthropic } from './openai-to-anthropic/index.js';
import { sanitizeToolId } from './shared/tool-ids.js';
import { testContext } from './shared/test-fixtures.js';

const numRuns = Number(process.env.PROPERTY_RUNS ?? 200);

// ---- shared generators -------------------------------------------------------------------

/** Text Anthropic accepts in a text block: not blank. */
const text = fc.string({ minLength: 1, maxLength: 30 }).filter((s) => s.trim() !== '');
const toolName = fc.stringMatching(/^[a-zA-Z0-9_-]{1,64}$/);
// Through JSON text, as a request body arrives: JSON cannot carry -0, which jsonValue() can make.
const jsonObject = fc
  .dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 })
  .map((value) => JSON.parse(JSON.stringify(value)) as Record<string, unknown>);
const parameters = fc
  .dictionary(fc.stringMatching(/^[a-z]{1,8}$/), fc.constantFrom({ type: 'string' }, { type: 'number' }), { maxKeys: 3 })
  .map((properties) => ({ type: 'object', properties }));
const tools = fc.uniqueArray(fc.record({ name: toolName, description: fc.option(text, { nil: undefined }), parameters }), {
  minLength: 1,
  maxLength: 4,
  selector: (tool) => tool.name,
});
const unitInterval = fc.oneof(fc.constantFrom(0, 1), fc.double({ min: 0, max: 1, noNaN: true })).filter((x) => !Object.is(x, -0));
const stops = fc.array(fc.string({ minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 4 });
const maxTokens = fc.integer({ min: 1, max: 100_000 });

/** Unique ids whatever the random prefix: the `_<step>_<call>` suffix can be read back from the end. */
function toolId(prefix: string, step: number, call: number): string {
  return `${prefix}_${step}_${call}`;
}

// ---- OpenAI → Anthropic → OpenAI ---------------------------------------------------------

const openAiUserContent = fc.oneof(
  text,
  fc.array(
    text.map((t) => ({ type: 'text' as const, text: t })),
    { minLength: 1, maxLength: 3 },
  ),
);
const openAiStep = fc.oneof(
  fc.record({ kind: fc.constant('chat' as const), assistant: text, user: openAiUserContent }),
  fc.record({
    kind: fc.constant('tools' as const),
    text: fc.option(text, { nil: null }),
    calls: fc.array(
      fc.record({
        idPrefix: fc.string({ minLength: 1, maxLength: 12 }),
        tool: fc.nat(),
        args: jsonObject,
        result: fc.string({ maxLength: 30 }),
      }),
      {
        minLength: 1,
        maxLength: 3,
      },
    ),
    user: fc.option(openAiUserContent, { nil: undefined }),
  }),
);

const openAiRequest = fc
  .record({
    system: fc.option(text, { nil: undefined }),
    first: openAiUserContent,
    steps: fc.array(openAiStep, { maxLength: 5 }),
    tools,
    toolChoice: fc.option(fc.constantFrom('auto', 'required', 'none', 'named'), { nil: undefined }),
    parallel: fc.option(fc.boolean(), { nil: undefined }),
    temperature: fc.option(unitInterval, { nil: undefined }),
    topP: fc.option(unitInterval, { nil: undefined }),
    stop: fc.option(fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), stops), { nil: undefined }),
    maxTokens,
    user: fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
  })
  .map((g): ChatCompletionRequest => {
    const messages: ChatMessage[] = [];
    if (g.system !== undefined) messages.push({ role: 'system', content: g.system });
    messages.push({ role: 'user', content: g.first });
    g.steps.forEach((step, s) => {
      if (step.kind === 'chat') {
        messages.push({ role: 'assistant', content: step.assistant }, { role: 'user', content: step.user });
        return;
      }
      const calls = step.calls.map((call, c) => ({
        id: toolId(call.idPrefix, s, c),
        type: 'function' as const,
        function: { name: g.tools[call.tool % g.tools.length]!.name, arguments: JSON.stringify(call.args) },
      }));
      messages.push({ role: 'assistant', content: step.text, tool_calls: calls });
      step.calls.forEach((call, c) => messages.push({ role: 'tool', tool_call_id: calls[c]!.id, content: call.result }));
      if (step.user !== undefined) messages.push({ role: 'user', content: step.user });
    });
    const request: ChatCompletionRequest = {
      model: 'public-model',
      messages,
      max_tokens: g.maxTokens,
      tools: g.tools.map((tool) => ({
        type: 'function',
        function: {
          name: tool.name,
          ...(tool.description !== undefined && { description: tool.description }),
          parameters: tool.parameters,
        },
      })),
    };
    if (g.toolChoice !== undefined) {
      request.tool_choice = g.toolChoice === 'named' ? { type: 'function', function: { name: g.tools[0]!.name } } : g.toolChoice;
    }
    if (g.parallel !== undefined) request.parallel_tool_calls = g.parallel;
    if (g.temperature !== undefined) request.temperature = g.temperature;
    if (g.topP !== undefined) request.top_p = g.topP;
    if (g.stop !== undefined) request.stop = g.stop;
    if (g.user !== undefined) request.user = g.user;
    return chatCompletionRequest.parse(request);
  });

function openAiText(content: ChatMessage['content'] | null | undefined): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : `<${part.type}>`)).join('');
}

/** What an OpenAI request means, in a form both sides of a round trip can be compared in. */
function openAiMeaning(request: ChatCompletionRequest, ids: (id: string) => string) {
  const turns = request.messages.flatMap((message) => {
    switch (message.role) {
      case 'system':
      case 'developer':
        return [];
      case 'user':
        return [{ role: 'user', text: openAiText(message.content) }];
      case 'assistant':
        return [
          {
            role: 'assistant',
            text: openAiText(message.content),
            calls: (message.tool_calls ?? [])
              .flatMap((call) => (call.type === 'function' ? [call] : []))
              .map((call) => ({
                id: ids(call.id),
                name: call.function.name,
                args: JSON.parse(call.function.arguments) as unknown,
              })),
          },
        ];
      case 'tool':
        return [{ role: 'tool', id: ids(message.tool_call_id), text: openAiText(message.content) }];
    }
  });
  const hasTools = (request.tools ?? []).length > 0;
  const choice = request.tool_choice ?? (hasTools ? 'auto' : undefined);
  return {
    system: request.messages
      .filter((m) => m.role === 'system' || m.role === 'developer')
      .map((m) => openAiText(m.content))
      .join('\n\n'),
    turns,
    tools: (request.tools ?? []).filter(isFunctionTool).map((tool) => ({
      name: tool.function.name,
      description: tool.function.description,
      parameters: tool.function.parameters,
    })),
    toolChoice: choice,
    // `none` calls no tool, so a parallel flag next to it means nothing.
    parallel: choice === 'none' ? undefined : request.parallel_tool_calls === false ? false : undefined,
    temperature: request.temperature ?? undefined,
    // top_p 1 next to a temperature is left out on purpose (openai-to-anthropic/request.ts).
    topP:
      request.top_p === 1 && request.temperature !== undefined && request.temperature !== null ? undefined : (request.top_p ?? undefined),
    stop:
      request.stop === undefined || request.stop === null ? undefined : typeof request.stop === 'string' ? [request.stop] : request.stop,
    maxTokens: request.max_completion_tokens ?? request.max_tokens ?? undefined,
    user: request.user,
  };
}

// ---- Anthropic → OpenAI → Anthropic ------------------------------------------------------

type AnthropicMessage = MessagesRequest['messages'][number];

const anthropicUserContent = fc.oneof(
  text,
  fc.array(
    text.map((t) => ({ type: 'text' as const, text: t })),
    { minLength: 1, maxLength: 3 },
  ),
);
const anthropicStep = fc.oneof(
  fc.record({ kind: fc.constant('chat' as const), assistant: anthropicUserContent, user: anthropicUserContent }),
  fc.record({
    kind: fc.constant('tools' as const),
    text: fc.option(text, { nil: undefined }),
    uses: fc.array(
      fc.record({
        idPrefix: fc.stringMatching(/^[a-zA-Z0-9_-]{1,12}$/),
        tool: fc.nat(),
        input: jsonObject,
        result: fc.string({ maxLength: 30 }),
        isError: fc.boolean(),
      }),
      { minLength: 1, maxLength: 3 },
    ),
    user: fc.option(text, { nil: undefined }),
  }),
);

const anthropicRequest = fc
  .record({
    system: fc.option(
      fc.oneof(
        text,
        text.map((t) => [{ type: 'text' as const, text: t }]),
      ),
      { nil: undefined },
    ),
    first: anthropicUserContent,
    steps: fc.array(anthropicStep, { maxLength: 5 }),
    tools,
    toolChoice: fc.option(fc.constantFrom('auto', 'any', 'none', 'tool'), { nil: undefined }),
    disableParallel: fc.option(fc.boolean(), { nil: undefined }),
    temperature: fc.option(unitInterval, { nil: undefined }),
    topP: fc.option(unitInterval, { nil: undefined }),
    stop: fc.option(stops, { nil: undefined }),
    maxTokens,
    user: fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
  })
  .map((g): MessagesRequest => {
    const messages: AnthropicMessage[] = [{ role: 'user', content: g.first }];
    g.steps.forEach((step, s) => {
      if (step.kind === 'chat') {
        messages.push({ role: 'assistant', content: step.assistant }, { role: 'user', content: step.user });
        return;
      }
      const uses = step.uses.map((use, u) => ({
        type: 'tool_use' as const,
        id: toolId(use.idPrefix, s, u),
        name: g.tools[use.tool % g.tools.length]!.name,
        input: use.input,
      }));
      messages.push({
        role: 'assistant',
        content: [...(step.text === undefined ? [] : [{ type: 'text' as const, text: step.text }]), ...uses],
      });
      messages.push({
        role: 'user',
        content: [
          ...step.uses.map((use, u) => ({
            type: 'tool_result' as const,
            tool_use_id: uses[u]!.id,
            content: use.result,
            ...(use.isError && { is_error: true }),
          })),
          ...(step.user === undefined ? [] : [{ type: 'text' as const, text: step.user }]),
        ],
      });
    });
    const request: MessagesRequest = {
      model: 'public-model',
      max_tokens: g.maxTokens,
      messages,
      tools: g.tools.map((tool) => ({
        name: tool.name,
        ...(tool.description !== undefined && { description: tool.description }),
        input_schema: tool.parameters as { type: 'object' },
      })),
    };
    if (g.system !== undefined) request.system = g.system;
    if (g.toolChoice !== undefined) {
      const disable = g.disableParallel === undefined ? {} : { disable_parallel_tool_use: g.disableParallel };
      request.tool_choice =
        g.toolChoice === 'none'
          ? { type: 'none' }
          : g.toolChoice === 'tool'
            ? { type: 'tool', name: g.tools[0]!.name, ...disable }
            : { type: g.toolChoice, ...disable };
    }
    if (g.temperature !== undefined) request.temperature = g.temperature;
    if (g.topP !== undefined) request.top_p = g.topP;
    if (g.stop !== undefined) request.stop_sequences = g.stop;
    if (g.user !== undefined) request.metadata = { user_id: g.user };
    return messagesRequest.parse(request);
  });

/** What an Anthropic request means; `original` applies the documented is_error → "Error: " prefix. */
function anthropicMeaning(request: MessagesRequest, original: boolean) {
  const turns = request.messages.map((message) => {
    const blocks = typeof message.content === 'string' ? [{ type: 'text' as const, text: message.content }] : message.content;
    if (message.role === 'assistant') {
      return {
        role: 'assistant',
        text: blocks.map((block) => (block.type === 'text' ? block.text : '')).join(''),
        calls: blocks.flatMap((block) =>
          block.type === 'tool_use' ? [{ id: sanitizeToolId(block.id), name: block.name, input: block.input }] : [],
        ),
      };
    }
    return {
      role: 'user',
      items: blocks.map((block) => {
        if (block.type === 'text') return { text: block.text };
        if (block.type === 'tool_result') {
          const content =
            typeof block.content === 'string'
              ? block.content
              : (block.content ?? []).map((b) => (b.type === 'text' ? b.text : '')).join('\n');
          return {
            result: sanitizeToolId(block.tool_use_id),
            content: original && block.is_error === true ? `Error: ${content}` : content,
          };
        }
        return { other: block.type };
      }),
    };
  });
  const choice = request.tool_choice;
  return {
    system:
      request.system === undefined
        ? ''
        : typeof request.system === 'string'
          ? request.system
          : request.system.map((b) => b.text).join('\n\n'),
    turns,
    tools: (request.tools ?? []).map((tool) => ({ name: tool.name, description: tool.description, schema: tool.input_schema })),
    toolChoice: choice === undefined ? undefined : { type: choice.type, name: choice.type === 'tool' ? choice.name : undefined },
    disableParallel: choice !== undefined && choice.type !== 'none' && choice.disable_parallel_tool_use === true,
    temperature: request.temperature,
    topP: request.top_p === 1 && request.temperature !== undefined ? undefined : request.top_p,
    stop: request.stop_sequences,
    maxTokens: request.max_tokens,
    user: request.metadata?.user_id,
  };
}

describe('translators keep meaning across a round trip (property)', () => {
  it('OpenAI → Anthropic → OpenAI', () => {
    fc.assert(
      fc.property(openAiRequest, (original) => {
        const anthropicBody = new OpenAiToAnthropic(original, testContext('anthropic')).request().body;
        const anthropic = messagesRequest.parse(anthropicBody);
        const back = chatCompletionRequest.parse(new AnthropicToOpenAi(anthropic, testContext('openai')).request().body);
        assert.deepEqual(
          openAiMeaning(back, (id) => id),
          openAiMeaning(original, sanitizeToolId),
        );
      }),
      { numRuns },
    );
  });

  it('Anthropic → OpenAI → Anthropic', () => {
    fc.assert(
      fc.property(anthropicRequest, (original) => {
        const openAiBody = new AnthropicToOpenAi(original, testContext('openai')).request().body;
        const openAi = chatCompletionRequest.parse(openAiBody);
        const back = messagesRequest.parse(new OpenAiToAnthropic(openAi, testContext('anthropic')).request().body);
        assert.deepEqual(anthropicMeaning(back, false), anthropicMeaning(original, true));
      }),
      { numRuns },
    );
  });
});
