import { z } from 'zod';
import { modelIdField } from '../../http/validate.js';
import { checkedBase64, checkedField, httpUrlMessage, isHttpUrl } from '../image-source.js';
import { maxSessionIdLength, sessionIdTooLong } from '../../routing/session-inputs.js';

const cacheControl = z.looseObject({ type: z.literal('ephemeral') }).optional();

const textBlock = z.looseObject({ type: z.literal('text'), text: z.string(), cache_control: cacheControl });
const imageSource = z.discriminatedUnion('type', [
  z.looseObject({
    type: z.literal('base64'),
    media_type: z.enum(['image/jpeg', 'image/png', 'image/gif', 'image/webp']),
    data: checkedField(checkedBase64),
  }),
  z.looseObject({ type: z.literal('url'), url: z.string().min(1).refine(isHttpUrl, httpUrlMessage) }),
]);
/** A document's inline data and URL are held to the image rule; text and content sources are not data. */
const documentSource = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('base64'), data: checkedField(checkedBase64) }),
  z.looseObject({ type: z.literal('url'), url: z.string().min(1).refine(isHttpUrl, httpUrlMessage) }),
  z.looseObject({ type: z.enum(['text', 'content']) }),
]);
const imageBlock = z.looseObject({ type: z.literal('image'), source: imageSource, cache_control: cacheControl });
const documentBlock = z.looseObject({
  type: z.literal('document'),
  source: documentSource,
  cache_control: cacheControl,
});
const toolUseBlock = z.looseObject({
  type: z.literal('tool_use'),
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
  cache_control: cacheControl,
});
/** A search result the client supplies (its RAG), for the model to cite: a source, a title and text. */
const searchResultBlock = z.looseObject({
  type: z.literal('search_result'),
  source: z.string(),
  title: z.string(),
  content: z.array(textBlock),
  cache_control: cacheControl,
});
/**
 * Blocks of the tools Anthropic runs itself (web search and fetch, code execution, MCP
 * connectors), as an earlier reply gave them and the client sends them back in the history.
 * Their shape is Anthropic's to define: passed to Anthropic-protocol suppliers as sent, refused
 * toward the others, which have no such blocks.
 */
export const serverToolBlockTypes = [
  'server_tool_use',
  'web_search_tool_result',
  'web_fetch_tool_result',
  'code_execution_tool_result',
  'bash_code_execution_tool_result',
  'text_editor_code_execution_tool_result',
  'tool_search_tool_result',
  'mcp_tool_use',
  'mcp_tool_result',
  'container_upload',
] as const;
const serverToolBlock = z.looseObject({ type: z.enum(serverToolBlockTypes) });
const serverToolTypes = new Set<string>(serverToolBlockTypes);

/** Whether a content block is one of Anthropic's server tools' (see serverToolBlockTypes). */
export function isServerToolBlock(block: { type: string }): block is z.infer<typeof serverToolBlock> {
  return serverToolTypes.has(block.type);
}
const toolResultBlock = z.looseObject({
  type: z.literal('tool_result'),
  tool_use_id: z.string().min(1),
  content: z
    .union([z.string(), z.array(z.discriminatedUnion('type', [textBlock, imageBlock, documentBlock, searchResultBlock]))])
    .optional(),
  is_error: z.boolean().optional(),
  cache_control: cacheControl,
});
const thinkingBlock = z.looseObject({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() });
const redactedThinkingBlock = z.looseObject({ type: z.literal('redacted_thinking'), data: z.string() });

/** Any content block a client may send. */
export const contentBlock = z.discriminatedUnion('type', [
  textBlock,
  imageBlock,
  documentBlock,
  toolUseBlock,
  toolResultBlock,
  thinkingBlock,
  redactedThinkingBlock,
  searchResultBlock,
  serverToolBlock,
]);

const message = z.looseObject({
  role: z.enum(['user', 'assistant']),
  content: z.union([z.string(), z.array(contentBlock)]),
});

/** A tool the client implements: a name and the JSON schema of its input. */
const customTool = z.looseObject({
  type: z.literal('custom').optional(),
  name: z.string().min(1).max(128),
  description: z.string().optional(),
  input_schema: z.looseObject({ type: z.literal('object') }),
});
/**
 * A tool Anthropic itself defines and runs or describes (`web_search_20250305`, `bash_20250124`,
 * `text_editor_…`, `code_execution_…`): its versioned type and name, the rest its own. Passed to
 * Anthropic-protocol suppliers as sent; other suppliers have no such tools (refused in translation).
 */
export const anthropicDefinedTool = z.looseObject({
  type: z.string().regex(/^[a-z][a-z0-9_]*_\d{8}$/, 'must be "custom" or a versioned tool type such as web_search_20250305'),
  name: z.string().min(1).max(128),
});
const tool = z.union([customTool, anthropicDefinedTool]);
/** A tool of a messages request, either kind. */
export type MessagesTool = z.infer<typeof tool>;
/** A tool the client implements (what every supplier protocol can carry). */
export type CustomTool = z.infer<typeof customTool>;

/** Whether a tool is one the client implements (not defined by Anthropic). */
export function isCustomTool(tool: MessagesTool): tool is CustomTool {
  return 'input_schema' in tool && (tool.type === undefined || tool.type === 'custom');
}

const toolChoice = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({ type: z.literal('none') }),
  z.looseObject({ type: z.literal('tool'), name: z.string().min(1), disable_parallel_tool_use: z.boolean().optional() }),
]);

/** The fields of a messages request (refined below: zod cannot omit fields of a refined object). */
const messagesFields = z.looseObject({
  model: modelIdField,
  max_tokens: z.number().int().positive(),
  messages: z.array(message).min(1),
  system: z.union([z.string(), z.array(textBlock)]).optional(),
  tools: z.array(tool).optional(),
  tool_choice: toolChoice.optional(),
  stop_sequences: z.array(z.string()).optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().positive().optional(),
  stream: z.boolean().optional(),
  metadata: z
    .looseObject({
      user_id: z.string().max(256).optional(),
      session_id: z.string().max(maxSessionIdLength, sessionIdTooLong).optional(),
      sticky_key: z.string().max(maxSessionIdLength, sessionIdTooLong).optional(),
    })
    .optional(),
  thinking: z
    .discriminatedUnion('type', [
      z.looseObject({ type: z.literal('enabled'), budget_tokens: z.number().int().min(1024) }),
      z.looseObject({ type: z.literal('disabled') }),
      // The model decides how much to think (newer models); passed to Anthropic-protocol suppliers as sent.
      z.looseObject({ type: z.literal('adaptive') }),
    ])
    .optional(),
  region: z.string().min(1).max(32).optional(),
});

/** A forced tool call needs the tool: Anthropic refuses it too, and a translation would drop it silently. */
function forcedToolIsDefined(request: Pick<z.infer<typeof messagesFields>, 'tools' | 'tool_choice'>, ctx: z.RefinementCtx): void {
  const choice = request.tool_choice;
  if (choice?.type === 'any' && !request.tools?.length) {
    ctx.addIssue({ code: 'custom', path: ['tool_choice'], message: '"any" forces a tool call, but the request defines no tools' });
  } else if (choice?.type === 'tool' && !request.tools?.some((t) => t.name === choice.name)) {
    ctx.addIssue({ code: 'custom', path: ['tool_choice'], message: `names the tool "${choice.name}", which "tools" does not define` });
  }
}

/**
 * `POST /v1/messages` request (Anthropic messages interface). Checked fields are the ones the
 * gateway acts on or translates; other fields pass through to Anthropic-protocol suppliers.
 */
export const messagesRequest = messagesFields.superRefine(forcedToolIsDefined);

/** A validated messages request. */
export type MessagesRequest = z.infer<typeof messagesRequest>;
/** One content block of a messages request. */
export type ContentBlock = z.infer<typeof contentBlock>;

/** `POST /v1/messages/count_tokens`: the messages body without `max_tokens`. */
export const countTokensRequest = messagesFields.omit({ max_tokens: true, stream: true }).superRefine(forcedToolIsDefined);
/** A validated count_tokens request. */
export type CountTokensRequest = z.infer<typeof countTokensRequest>;
