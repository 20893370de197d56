// The one rule for image sources, held by both interface schemas, so it applies toward every
// supplier — same-protocol passthrough included (outside probe: file:///etc/passwd and broken
// base64 reached OpenAI and Responses suppliers from an Anthropic client).
import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { ApiError } from '../../../core/errors/index.js';
import { validateBody } from '../http/validate.js';
import { chatCompletionRequest } from './chat-completions/schema.js';
import { messagesRequest } from './messages/schema.js';
import { nativeResponsesRequest } from './native-responses/schema.js';
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

  // MIME writes base64 with a line break every 76 characters; both APIs document it without.
  const pdf = Buffer.from('%PDF-1.4 '.repeat(40)).toString('base64');
  const mime = (data: string, eol: string) => data.replace(/.{76}/g, `$&${eol}`);

  it('base64 with MIME line breaks (\\r\\n or \\n) is accepted, and forwarded without them', () => {
    assert.ok(pdf.length > 76 * 3);
    for (const eol of ['\r\n', '\n']) {
      const image = validateBody(messagesRequest, {
        model: 'm',
        max_tokens: 10,
        messages: [
          { role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: mime(pdf, eol) } }] },
        ],
      });
      assert.deepEqual((image.messages[0]!.content as { source: unknown }[])[0]!.source, {
        type: 'base64',
        media_type: 'image/png',
        data: pdf,
      });
      const chat = validateBody(chatCompletionRequest, {
        model: 'm',
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${mime(pdf, eol)}` } }] }],
      });
      assert.deepEqual(chat.messages[0]!.content, [{ type: 'image_url', image_url: { url: `data:image/png;base64,${pdf}` } }]);
    }
    // Line breaks are all that is forgiven: other whitespace or characters are still refused.
    refused(
      () =>
        validateBody(messagesRequest, {
          model: 'm',
          max_tokens: 10,
          messages: [
            {
              role: 'user',
              content: [
                { type: 'image', source: { type: 'base64', media_type: 'image/png', data: `${pdf.slice(0, 76)} \t${pdf.slice(76)}` } },
              ],
            },
          ],
        }),
      'messages[0].content[0].source.data',
    );
  });

  it('messages: a document source is held to the same rule (base64 data, http(s) URL)', () => {
    const body = (source: unknown) => ({
      model: 'm',
      max_tokens: 10,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'read' },
            { type: 'document', source },
          ],
        },
      ],
    });
    refused(
      () => validateBody(messagesRequest, body({ type: 'base64', media_type: 'application/pdf', data: '!!!not base64' })),
      'messages[0].content[1].source.data',
    );
    refused(() => validateBody(messagesRequest, body({ type: 'url', url: 'file:///etc/passwd' })), 'messages[0].content[1].source.url');
    validateBody(messagesRequest, body({ type: 'base64', media_type: 'application/pdf', data: pdf }));
    validateBody(messagesRequest, body({ type: 'base64', media_type: 'application/pdf', data: mime(pdf, '\r\n') }));
    validateBody(messagesRequest, body({ type: 'url', url: 'https://example.com/a.pdf' }));
    validateBody(messagesRequest, body({ type: 'text', media_type: 'text/plain', data: 'plain text, not base64!' }));
  });

  it('chat: file.file_data is a base64 data URL or base64, held to the same rule', () => {
    const body = (file: unknown) => ({
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'read' },
            { type: 'file', file },
          ],
        },
      ],
    });
    refused(() => validateBody(chatCompletionRequest, body({ file_data: '!!!not base64' })), 'messages[0].content[1].file.file_data');
    refused(
      () => validateBody(chatCompletionRequest, body({ filename: 'a.pdf', file_data: 'data:application/pdf;base64,!!!' })),
      'messages[0].content[1].file.file_data',
    );
    refused(
      () => validateBody(chatCompletionRequest, body({ file_data: 'data:application/pdf,%PDF' })),
      'messages[0].content[1].file.file_data',
    );
    validateBody(chatCompletionRequest, body({ filename: 'a.pdf', file_data: `data:application/pdf;base64,${pdf}` }));
    validateBody(chatCompletionRequest, body({ filename: 'a.pdf', file_data: pdf }));
    validateBody(chatCompletionRequest, body({ file_id: 'file-abc' }));
  });

  it('native responses: input_image and input_file are held to the same rule (the lane validates input)', () => {
    const body = (part: unknown) => ({
      model: 'm',
      stream: true,
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'look' }, part] }],
    });
    refused(
      () => validateBody(nativeResponsesRequest, body({ type: 'input_image', image_url: 'file:///etc/passwd' })),
      'input[0].content[1].image_url',
    );
    refused(
      () =>
        validateBody(nativeResponsesRequest, body({ type: 'input_file', filename: 'a.pdf', file_data: 'data:application/pdf;base64,!!!' })),
      'input[0].content[1].file_data',
    );
    validateBody(nativeResponsesRequest, body({ type: 'input_image', image_url: `data:image/png;base64,${png}` }));
    validateBody(nativeResponsesRequest, body({ type: 'input_image', image_url: 'https://example.com/cat.png' }));
    validateBody(nativeResponsesRequest, body({ type: 'input_image', file_id: 'file-abc' }));
    validateBody(nativeResponsesRequest, body({ type: 'input_file', filename: 'a.pdf', file_data: `data:application/pdf;base64,${pdf}` }));
  });
});
