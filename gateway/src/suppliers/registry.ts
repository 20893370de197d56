import type { SupplierProtocol } from '../../../core/config/index.js';
import { anthropicAdapter } from './anthropic/index.js';
import { openAiAdapter } from './openai/index.js';
import { openAiResponsesAdapter } from './openai-responses/index.js';
import type { SupplierProtocolAdapter } from './types.js';

/** Every supplier protocol's adapter; adding a protocol without one fails to compile. */
export const supplierAdapters = {
  openai: openAiAdapter,
  anthropic: anthropicAdapter,
  'openai-responses': openAiResponsesAdapter,
} as const satisfies Record<SupplierProtocol, SupplierProtocolAdapter>;
