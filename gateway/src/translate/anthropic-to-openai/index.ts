// Public surface of the Anthropic-client → OpenAI-supplier translator.
export { AnthropicToOpenAi } from './translator.js';
export { shortenToolName } from './tool-names.js';
