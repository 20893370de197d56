import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { AudioFile, FormField } from './upload.js';

/** A multipart/form-data body to send upstream; `open()` streams it again for every attempt. */
export interface MultipartBody {
  contentType: string;
  length: number;
  open(): Readable;
}

/** Quotes a header parameter value (RFC 7578: escape quotes, no line breaks). */
function quoted(value: string): string {
  return `"${value.replace(/[\r\n]/g, ' ').replace(/"/g, '%22')}"`;
}

/**
 * The upstream form: the text fields, then the audio streamed from its spooled file. The length
 * is known up front, so suppliers get a Content-Length rather than a chunked upload.
 */
export function multipartBody(fields: readonly FormField[], file: AudioFile): MultipartBody {
  const boundary = `svc-${randomBytes(16).toString('hex')}`;
  let preamble = '';
  for (const [name, value] of fields) {
    preamble += `--${boundary}\r\ncontent-disposition: form-data; name=${quoted(name)}\r\n\r\n${value}\r\n`;
  }
  const contentType = file.contentType && file.contentType !== 'application/octet-stream' ? file.contentType : audioMime[file.format];
  preamble += `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename=${quoted(file.filename)}\r\ncontent-type: ${contentType}\r\n\r\n`;
  const head = Buffer.from(preamble, 'utf8');
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`, 'utf8');
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    length: head.length + file.bytes + tail.length,
    open: () =>
      Readable.from(
        (async function* () {
          yield head;
          yield* createReadStream(file.path, { highWaterMark: 64 * 1024 });
          yield tail;
        })(),
        { objectMode: false },
      ),
  };
}

/** Media type of each accepted container, for uploads the client labelled generically. */
const audioMime: Record<AudioFile['format'], string> = {
  wav: 'audio/wav',
  mp3: 'audio/mpeg',
  m4a: 'audio/mp4',
  flac: 'audio/flac',
  ogg: 'audio/ogg',
  webm: 'audio/webm',
};
