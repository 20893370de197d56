import { z } from 'zod';
import { modelIdField } from '../../http/validate.js';
import { checkedField, checkedFileData, checkedImageUrl } from '../image-source.js';

/**
 * A content part. Images and inline files are held to the rule of every interface
 * (interfaces/image-source.ts): an `image_url` is an http(s) URL or a base64 data URL, a
 * `file_data` base64 (a data URL or alone); a part by `file_id` carries neither.
 */
const inputPart = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('input_image'), image_url: checkedField(checkedImageUrl).optional() }),
  z.looseObject({ type: z.literal('input_file'), file_data: checkedField(checkedFileData).optional() }),
  z.looseObject({ type: z.enum(['input_text', 'input_audio', 'output_text', 'refusal']) }),
]);

const messageItem = z.looseObject({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([z.string(), z.array(inputPart).min(1)]),
});

const functionCallItem = z.looseObject({
  type: z.literal('function_call'),
  call_id: z.string().min(1),
  name: z.string().min(1),
  arguments: z.string(),
});

const functionCallOutputItem = z.looseObject({
  type: z.literal('function_call_output'),
  call_id: z.string().min(1),
  output: z.union([z.string(), z.array(inputPart)]),
});

/** One native input item: a message, or a function call and its output (tool round trips). */
const inputItem = z.union([messageItem, functionCallItem, functionCallOutputItem]);

/**
 * `POST /v1/native/responses` request (docs/spec-conformance.md 4.5): `input` must be a list of native input
 * messages and `stream` must be `true`; everything else passes through untouched.
 */
export const nativeResponsesRequest = z.looseObject({
  model: modelIdField,
  instructions: z.string().optional(),
  input: z.array(inputItem, 'must be a list of native input messages').min(1, 'must hold at least one input message'),
  stream: z.literal(true, 'must be true: the native lane only streams'),
  store: z.boolean().optional(),
  // Read by the gateway (the worst case a budget reserves), so held to what the chat lanes take
  // for their output limits: 1e308 reserved "Infinity USD" (outside probe).
  max_output_tokens: z.number().int().positive().nullable().optional(),
  region: z.string().min(1).max(32).optional(),
});

/** A validated native responses request. */
export type NativeResponsesRequest = z.infer<typeof nativeResponsesRequest>;
