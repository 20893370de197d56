// The one rule for image sources, held by both interface schemas, so it applies toward every
// supplier — same-protocol passthrough included (outside probe: file:///etc/passwd and broken
// base64 reached OpenAI and Responses suppliers from an Anthropic client).
import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { ApiError } from '../../../core/errors/index.js';
import { validateBody } from '../http/validate.js';
import { chatCompletionRequest } from './chat-completions/schema.js';
import { messagesRequest } from './messages/schema.js';
import { isBase64, isHttpUrl } from './image-source.js';

const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==';

function refused(run: () => unknown, param: string): void {
  assert.throws(run, (err: unknown) => {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.code, 'validation_error');
    assert.equal(err.param, param);
    return true;
  });
}

describe('image sources', () => {
  it('isHttpUrl and isBase64', () => {
    assert.ok(isHttpUrl('https://example.com/a.png') && isHttpUrl('HTTP://example.com/a.png'));
    for (const url of ['file:///etc/passwd', 'ftp://example.com/a.png', 'gopher://x', 'https://', '/etc/passwd', 'example.com/a.png'])
      assert.ok(!isHttpUrl(url), url);
    assert.ok(isBase64(png) && isBase64('QUJD') && isBase64('QUI=') && isBase64('QUI'));
    for (const data of ['!!!not base64', 'QUJD\n', 'Q', 'QUI==', 'QU=I', '', 'QUJD-_'] as const) assert.ok(!isBase64(data), data);
  });

  it('messages: an image source must be an http(s) URL or valid base64, whatever supplier serves it', () => {
    const body = (source: unknown) => ({
      model: 'm',
      max_tokens: 10,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image', source },
          ],
        },
      ],
    });
    refused(() => validateBody(messagesRequest, body({ type: 'url', url: 'file:///etc/passwd' })), 'messages[0].content[1].source.url');
    refused(
      () => validateBody(messagesRequest, body({ type: 'base64', media_type: 'image/png', data: '!!!not base64' })),
      'messages[0].content[1].source.data',
    );
    validateBody(messagesRequest, body({ type: 'url', url: 'https://example.com/cat.png' }));
    validateBody(messagesRequest, body({ type: 'base64', media_type: 'image/png', data: png }));
    // An image inside a tool result is held to the same rule.
    refused(
      () =>
        validateBody(messagesRequest, {
          model: 'm',
          max_tokens: 10,
          messages: [
            { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'f', input: {} }] },
            {
              role: 'user',
              content: [
                { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'image', source: { type: 'url', url: 'file:///x' } }] },
              ],
            },
          ],
        }),
      'messages[1].content[0].content[0].source.url',
    );
  });

  it('chat: image_url.url must be an http(s) URL or a base64 data URL, whatever supplier serves it', () => {
    const body = (url: string) => ({
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url } },
          ],
        },
      ],
    });
    refused(() => validateBody(chatCompletionRequest, body('file:///etc/passwd')), 'messages[0].content[1].image_url.url');
    refused(() => validateBody(chatCompletionRequest, body('data:image/png;base64,!!!not base64')), 'messages[0].content[1].image_url.url');
    refused(() => validateBody(chatCompletionRequest, body('data:image/svg+xml,<svg/>')), 'messages[0].content[1].image_url.url');
    validateBody(chatCompletionRequest, body('https://example.com/cat.png'));
    validateBody(chatCompletionRequest, body(`data:image/png;base64,${png}`));
  });
});
