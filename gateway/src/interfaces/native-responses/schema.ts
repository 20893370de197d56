import { z } from 'zod';
import { modelIdField } from '../../http/validate.js';

const inputPart = z.looseObject({
  type: z.enum(['input_text', 'input_image', 'input_file', 'input_audio', 'output_text', 'refusal']),
});

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
  region: z.string().min(1).max(32).optional(),
});

/** A validated native responses request. */
export type NativeResponsesRequest = z.infer<typeof nativeResponsesRequest>;
