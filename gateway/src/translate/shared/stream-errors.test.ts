import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../../core/errors/index.js';
import { anthropicStreamErrorFrame, openAiStreamErrorFrame, responsesStreamErrorFrame } from './stream-errors.js';

/** The JSON of the single `data:` line of an SSE frame. */
function dataOf(frame: string): Record<string, any> {
  const line = frame.split('\n').find((l) => l.startsWith('data: '));
  if (!line) throw new Error(`no data line in ${JSON.stringify(frame)}`);
  return JSON.parse(line.slice('data: '.length)) as Record<string, any>;
}

describe('in-stream errors carry the catalogue shape on every interface', () => {
  const error = new ApiError('stream_interrupted', { details: { supplier: 'sim-eu' } });
  const catalogueShape = expect.objectContaining({
    code: 'stream_interrupted',
    type: expect.any(String),
    message: expect.stringMatching(/^stream_interrupted - /),
    human_message: expect.any(String),
    retryable: expect.any(Boolean),
    request_id: 'req_1',
  });

  it('OpenAI chat streams: a data frame with error', () => {
    expect(dataOf(openAiStreamErrorFrame(error, 'req_1')).error).toEqual(catalogueShape);
  });

  it('Anthropic streams: event error with the whole body', () => {
    const frame = anthropicStreamErrorFrame(error, 'req_1');
    expect(frame.startsWith('event: error\n')).toBe(true);
    expect(dataOf(frame).error).toEqual(catalogueShape);
    expect(dataOf(frame).request_id).toBe('req_1');
  });

  it('the native Responses lane: the Responses error event, with human_message and the catalogue error inside', () => {
    const frame = responsesStreamErrorFrame(error, 'req_1');
    expect(frame.startsWith('event: error\n')).toBe(true);
    const data = dataOf(frame);
    expect(data).toMatchObject({ type: 'error', code: 'stream_interrupted', param: null, human_message: error.humanMessage });
    expect(data.message).toBe(error.message);
    expect(data.error).toEqual(catalogueShape);
  });
});
