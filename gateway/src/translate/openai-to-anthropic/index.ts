// Public surface of the OpenAI-client → Anthropic-supplier translator.
export { OpenAiToAnthropic } from './translator.js';
export { jsonToolName } from './request.js';
