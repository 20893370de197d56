// Audio endpoints: speech synthesis returns real, decodable containers (WAV with a PCM tone, or
// silent MPEG-1 Layer III frames) streamed in chunks; transcription answers with text derived
// from the uploaded bytes so tests can tell uploads apart.
import type { MultipartUpload } from './multipart.js';
import { asObject, type Exchange, sendBody, sendError, sendJson } from './http.js';
import { cutAfterHeaders } from './sse.js';

/** Seconds of audio produced per input character at speed 1 (≈ normal speech rate). */
const SECONDS_PER_CHAR = 0.06;
/** OpenAI's wav/pcm output is 24 kHz mono 16-bit. */
const PCM_RATE = 24_000;
/** Size of each body chunk written for speech. */
const CHUNK_BYTES = 16_320;

// 400 Hz at 24 kHz is exactly 60 samples (120 bytes) per period, and CHUNK_BYTES is a multiple of
// 120, so every chunk starts on a period boundary and one precomputed block serves all requests.
const TONE_BLOCK = (() => {
  const buf = Buffer.alloc(CHUNK_BYTES);
  for (let i = 0; i < CHUNK_BYTES / 2; i++) buf.writeInt16LE(Math.round(3000 * Math.sin((2 * Math.PI * 400 * i) / PCM_RATE)), i * 2);
  return buf;
})();

// MPEG-1 Layer III, 64 kbit/s, 48 kHz, mono, no CRC: header FF FB 54 C4 and 144*64000/48000 =
// 192 bytes per frame (no padding ever needed); zeroed side info decodes as silence. 1152
// samples per frame = 24 ms. CHUNK_BYTES is exactly 85 frames.
const MP3_FRAME_BYTES = 192;
const MP3_FRAME_SECONDS = 1152 / 48_000;
const MP3_BLOCK = (() => {
  const buf = Buffer.alloc(CHUNK_BYTES);
  for (let off = 0; off < CHUNK_BYTES; off += MP3_FRAME_BYTES) buf.set([0xff, 0xfb, 0x54, 0xc4], off);
  return buf;
})();

/** Handles POST /v1/audio/speech. */
export function handleSpeech(ex: Exchange, raw: unknown): void {
  const body = asObject(raw);
  if (!body) return sendError(ex, 400, 'The request body must be a JSON object.');
  if (typeof body.model !== 'string' || body.model === '')
    return sendError(ex, 400, "Missing required parameter: 'model'.", { param: 'model' });
  const input = body.input;
  if (typeof input !== 'string' || input.length === 0)
    return sendError(ex, 400, "Missing required parameter: 'input'.", { param: 'input' });
  // Characters are code points (an emoji is one), as the gateway counts them.
  if ([...input].length > 4096) return sendError(ex, 400, "'input' must be at most 4096 characters.", { param: 'input' });
  const speed = body.speed ?? 1;
  if (typeof speed !== 'number' || speed < 0.25 || speed > 4) {
    return sendError(ex, 400, "'speed' must be a number from 0.25 to 4.0.", { param: 'speed' });
  }
  const seconds = Math.max(0.1, ([...input].length * SECONDS_PER_CHAR) / speed);
  const format = body.response_format ?? 'mp3';
  if (format === 'mp3') {
    const frames = Math.ceil(seconds / MP3_FRAME_SECONDS);
    return streamAudio(ex, 'audio/mpeg', null, frames * MP3_FRAME_BYTES, MP3_BLOCK);
  }
  const dataBytes = Math.round(seconds * PCM_RATE) * 2;
  if (format === 'wav') return streamAudio(ex, 'audio/wav', wavHeader(dataBytes), dataBytes, TONE_BLOCK);
  if (format === 'pcm') return streamAudio(ex, 'audio/pcm', null, dataBytes, TONE_BLOCK);
  sendError(ex, 400, `response_format '${String(format)}' is not supported by the simulator (mp3, wav, pcm).`, {
    param: 'response_format',
  });
}

/** Handles POST /v1/audio/transcriptions once the multipart body has been read. */
export function handleTranscription(ex: Exchange, upload: MultipartUpload): void {
  if (!upload.hasFile) return sendError(ex, 400, "Missing required parameter: 'file'.", { param: 'file' });
  const kind = upload.fileContentType || 'application/octet-stream';
  const text = `transcribed ${upload.fileBytes} bytes of ${kind} ${upload.sha256.slice(0, 6)}`;
  const duration = Math.round((wavSeconds(upload.head, upload.fileBytes) ?? upload.fileBytes / 32_000) * 1000) / 1000;
  const usage = { type: 'duration', seconds: Math.ceil(duration) };
  const format = upload.fields.response_format ?? 'json';
  switch (format) {
    case 'json':
      return sendJson(ex, 200, { text, usage });
    case 'text':
      return sendBody(ex, 200, `${text}\n`, 'text/plain; charset=utf-8');
    case 'srt':
      return sendBody(ex, 200, `1\n00:00:00,000 --> ${timestamp(duration, ',')}\n${text}\n\n`, 'text/plain; charset=utf-8');
    case 'vtt':
      return sendBody(ex, 200, `WEBVTT\n\n00:00:00.000 --> ${timestamp(duration, '.')}\n${text}\n\n`, 'text/plain; charset=utf-8');
    case 'verbose_json':
      return sendJson(ex, 200, {
        task: 'transcribe',
        language: upload.fields.language ?? 'english',
        duration,
        text,
        segments: [
          {
            id: 0,
            seek: 0,
            start: 0,
            end: duration,
            text,
            tokens: [],
            temperature: 0,
            avg_logprob: 0,
            compression_ratio: 1,
            no_speech_prob: 0,
          },
        ],
        usage,
      });
    default:
      return sendError(ex, 400, `response_format '${format}' is not supported.`, { param: 'response_format' });
  }
}

/** A 44-byte RIFF/WAVE header for mono 16-bit PCM (24 kHz, the simulator's speech rate, by default). */
export function wavHeader(dataBytes: number, rate = PCM_RATE): Buffer {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(1, 22); // mono
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

/** Duration of an uploaded WAV from its header's byte rate; null for other formats. */
function wavSeconds(head: Buffer, totalBytes: number): number | null {
  if (head.length < 44 || head.toString('ascii', 0, 4) !== 'RIFF' || head.toString('ascii', 8, 12) !== 'WAVE') return null;
  const byteRate = head.readUInt32LE(28);
  return byteRate > 0 ? Math.max(0, totalBytes - 44) / byteRate : null;
}

function timestamp(seconds: number, sep: ',' | '.'): string {
  const ms = Math.round(seconds * 1000);
  const hh = String(Math.floor(ms / 3_600_000)).padStart(2, '0');
  const mm = String(Math.floor(ms / 60_000) % 60).padStart(2, '0');
  const ss = String(Math.floor(ms / 1000) % 60).padStart(2, '0');
  return `${hh}:${mm}:${ss}${sep}${String(ms % 1000).padStart(3, '0')}`;
}

/**
 * Streams `header` then `dataBytes` bytes cut from a repeating block, chunk by chunk with
 * back-pressure (chunked transfer, like the real API). The cut-after fault counts chunks.
 */
function streamAudio(ex: Exchange, contentType: string, header: Buffer | null, dataBytes: number, block: Buffer): void {
  const res = ex.res;
  res.writeHead(200, { ...ex.headers, 'content-type': contentType });
  let offset = 0;
  let chunks = 0;
  let headerPending = header !== null;
  const next = (): Buffer | null => {
    if (headerPending && header) {
      headerPending = false;
      return header;
    }
    if (offset >= dataBytes) return null;
    const n = Math.min(block.length, dataBytes - offset);
    offset += n;
    return n === block.length ? block : block.subarray(0, n);
  };
  const pump = (): void => {
    for (;;) {
      if (res.destroyed) return;
      const chunk = next();
      if (!chunk) {
        res.end();
        return;
      }
      chunks++;
      if (ex.cutAfter !== undefined && chunks >= ex.cutAfter) {
        res.write(chunk, () => res.destroy());
        return;
      }
      if (!res.write(chunk)) {
        res.once('drain', pump);
        return;
      }
    }
  };
  if (ex.cutAfter === 0) return cutAfterHeaders(res);
  pump();
}
