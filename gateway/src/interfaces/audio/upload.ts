import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import { ApiError } from '../../../../core/errors/index.js';
import { sniffAudioFormat, sniffBytes, type AudioFormat } from './formats.js';

/** Largest audio file accepted (docs/spec-conformance.md 8.2: 25 MB). */
export const maxAudioBytes = 25 * 1024 * 1024;
/** Room for the form's text fields and part headers around the file. */
const formOverheadBytes = 1024 * 1024;
/** The largest upload body taken: the audio and its form around it. */
export const maxUploadBytes = maxAudioBytes + formOverheadBytes;
/**
 * After a refusal, the rest of the body is read and discarded so the client can receive the
 * error — up to this much; a client still sending after that loses the connection instead.
 */
const drainLimitBytes = 4 * 1024 * 1024;

/** The uploaded audio, spooled to a private temporary file. */
export interface AudioFile {
  path: string;
  bytes: number;
  format: AudioFormat;
  /** The file's first bytes (format signature, WAV header). */
  head: Buffer;
  filename: string;
  contentType: string;
}

/** One text field of the form. */
export type FormField = readonly [name: string, value: string];

/** A transcription upload read in full: its text fields and its audio file. */
export interface AudioUpload {
  /** Text fields in order; a name may repeat (`timestamp_granularities[]`). */
  fields: FormField[];
  file: AudioFile;
  /** Deletes the temporary file; call once the request is over. */
  discard(): Promise<void>;
}

const formatNames = 'WAV, MP3, M4A, FLAC, OGG or WebM';

/**
 * Keeps the first bytes of the file and rejects it as soon as they show it is not audio in an
 * accepted format, before the rest is read.
 */
class AudioSniffer extends Transform {
  head = Buffer.alloc(0);
  format: AudioFormat | undefined;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.head.length < sniffBytes) {
      this.head = Buffer.concat([this.head, chunk.subarray(0, sniffBytes - this.head.length)]);
      if (this.format === undefined && this.head.length >= 12) {
        this.format = sniffAudioFormat(this.head);
        if (!this.format) return done(notAudio());
      }
    }
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    this.format ??= sniffAudioFormat(this.head);
    done(this.format ? null : notAudio());
  }
}

function notAudio(): ApiError {
  return new ApiError('unsupported_media_type', {
    param: 'file',
    humanMessage: `The uploaded file is not audio in a supported format (${formatNames})`,
  });
}

/**
 * The refusal of a body whose Content-Length already exceeds the file limit plus room for the
 * form, before a byte of it is read; undefined when the declared size may be fine.
 */
export function refuseDeclaredSize(raw: IncomingMessage): ApiError | undefined {
  const declared = Number(raw.headers['content-length']);
  return Number.isFinite(declared) && declared > maxUploadBytes ? tooLarge() : undefined;
}

function tooLarge(): ApiError {
  return new ApiError('request_too_large', {
    param: 'file',
    humanMessage: `The audio file is larger than ${maxAudioBytes / (1024 * 1024)} MB; split the audio or compress it`,
    details: { limit_bytes: maxAudioBytes },
  });
}

/**
 * Reads a `multipart/form-data` transcription upload as it arrives: text fields into a list, the
 * `file` part through a format check into a temporary file — never whole in memory, so a
 * 25 MB upload costs the process a few buffers. The size limit is enforced while reading: the
 * first byte past 25 MB ends the read with 413. The spooled file lets failover send the same
 * audio to another supplier, and lets the whole upload be checked before any supplier sees it.
 */
export async function readAudioUpload(raw: IncomingMessage, idleMs: number): Promise<AudioUpload> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-audio-'));
  const discard = () => rm(dir, { recursive: true, force: true });
  try {
    const { fields, file } = await parseParts(raw, dir, idleMs);
    if (!file)
      throw new ApiError('missing_fields', { param: 'file', humanMessage: 'The "file" field (the audio to transcribe) is required' });
    return { fields, file, discard };
  } catch (error) {
    await discard();
    throw error;
  }
}

/** The form's parts; a client sending nothing for `idleMs` (stalled, or a slowloris) is cut off. */
function parseParts(raw: IncomingMessage, dir: string, idleMs: number): Promise<{ fields: FormField[]; file: AudioFile | undefined }> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: raw.headers,
        // One byte over the limit must reach the counter below; busboy only truncates beyond that.
        limits: { fileSize: maxAudioBytes + 1, files: 1, fields: 32, fieldSize: 64 * 1024, parts: 40 },
      });
    } catch (cause) {
      reject(new ApiError('unsupported_media_type', { humanMessage: 'Send the audio as multipart/form-data with a boundary', cause }));
      return;
    }
    const fields: FormField[] = [];
    let file: AudioFile | undefined;
    let spooling: Promise<void> | undefined;
    let fileStream: (NodeJS.ReadableStream & { destroy(): void }) | undefined;
    let spoolFile: WriteStream | undefined;
    let failed = false;
    let idle: NodeJS.Timeout | undefined;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      clearTimeout(idle);
      // Stop parsing and spooling (closing the temporary file); what the client still sends is
      // read and discarded, within a bound, so that it can receive the error.
      raw.unpipe(parser);
      fileStream?.destroy();
      // Its own: a file part refused in the same chunk it began in (a second file) is destroyed
      // before the pipeline below has started, and the pipeline then leaves its file open.
      spoolFile?.destroy();
      let drained = 0;
      raw.on('data', (chunk: Buffer) => {
        drained += chunk.length;
        if (drained > drainLimitBytes) raw.destroy();
      });
      raw.resume();
      reject(error);
    };
    const armIdleTimer = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        // 408: the client stalled, not anything behind the gateway (a 5xx would blame the service).
        fail(
          new ApiError('request_timeout', {
            status: 408,
            humanMessage: `The upload sent nothing for ${idleMs / 1000} s and was abandoned`,
          }),
        );
        raw.destroy();
      }, idleMs);
      idle.unref();
    };
    armIdleTimer();
    raw.on('data', () => {
      if (!failed) armIdleTimer();
    });
    parser.on('field', (name, value, info) => {
      // busboy reports a part with an empty name as a field named undefined.
      if (!name) return fail(new ApiError('validation_error', { humanMessage: 'Every form field needs a name' }));
      if (info.valueTruncated)
        return fail(new ApiError('validation_error', { param: name, humanMessage: `The "${name}" field is longer than 64 KiB` }));
      fields.push([name, value]);
    });
    parser.on('file', (name, stream, info) => {
      // busboy goes on parsing the chunk it holds after a refusal: no file is opened then.
      if (failed) {
        stream.resume();
        return;
      }
      if (name !== 'file' || spooling) {
        stream.resume();
        return fail(new ApiError('validation_error', { param: name, humanMessage: 'Send exactly one file, in the "file" field' }));
      }
      fileStream = stream;
      const path = join(dir, 'audio');
      const sniffer = new AudioSniffer();
      let bytes = 0;
      stream.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > maxAudioBytes) fail(tooLarge());
      });
      spoolFile = createWriteStream(path);
      spooling = pipeline(stream, sniffer, spoolFile).then(
        () => {
          if (failed) return;
          file = {
            path,
            bytes,
            format: sniffer.format!,
            head: sniffer.head,
            filename: info.filename || `audio.${sniffer.format}`,
            contentType: info.mimeType,
          };
        },
        (error: unknown) =>
          fail(
            error instanceof ApiError
              ? error
              : new ApiError('invalid_request', { humanMessage: 'The upload could not be read', cause: error }),
          ),
      );
    });
    // A second file part is dropped by busboy without a word: say so instead of transcribing the first.
    parser.on('filesLimit', () =>
      fail(new ApiError('validation_error', { param: 'file', humanMessage: 'Send exactly one file, in the "file" field' })),
    );
    parser.on('partsLimit', () => fail(new ApiError('validation_error', { humanMessage: 'The form has too many parts' })));
    parser.on('fieldsLimit', () => fail(new ApiError('validation_error', { humanMessage: 'The form has too many fields' })));
    parser.on('error', (cause: unknown) =>
      fail(new ApiError('invalid_request', { humanMessage: 'The multipart body is malformed', cause })),
    );
    parser.on('close', () => {
      clearTimeout(idle);
      void Promise.resolve(spooling).then(() => {
        if (!failed) resolve({ fields, file });
      });
    });
    raw.on('aborted', () => fail(new ApiError('request_rejected', { humanMessage: 'The client closed the connection during the upload' })));
    raw.pipe(parser);
  });
}
