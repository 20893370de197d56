/** Audio containers accepted for transcription (docs/spec-conformance.md 4.8: WAV, MP3, M4A, FLAC, OGG, WebM). */
export type AudioFormat = 'wav' | 'mp3' | 'm4a' | 'flac' | 'ogg' | 'webm';

/** Bytes of the file's beginning that format detection and the WAV duration need. */
export const sniffBytes = 4096;

const ascii = (head: Uint8Array, at: number, text: string) => Buffer.from(head.subarray(at, at + text.length)).toString('latin1') === text;

/**
 * The container a file's first bytes announce, by signature rather than by name or declared
 * type (clients label uploads loosely): RIFF/WAVE, an ID3 tag or an MPEG audio frame sync,
 * an ISO-BMFF `ftyp` box (M4A/MP4 audio), `fLaC`, `OggS`, or the EBML header of WebM.
 */
export function sniffAudioFormat(head: Uint8Array): AudioFormat | undefined {
  if (head.length >= 12 && ascii(head, 0, 'RIFF') && ascii(head, 8, 'WAVE')) return 'wav';
  if (head.length >= 4 && ascii(head, 0, 'fLaC')) return 'flac';
  if (head.length >= 4 && ascii(head, 0, 'OggS')) return 'ogg';
  if (head.length >= 4 && head[0] === 0x1a && head[1] === 0x45 && head[2] === 0xdf && head[3] === 0xa3) return 'webm';
  if (head.length >= 8 && ascii(head, 4, 'ftyp')) return 'm4a';
  if (head.length >= 3 && ascii(head, 0, 'ID3')) return 'mp3';
  // MPEG audio frame: 11 sync bits, a valid version (not 01) and layer (not 00).
  if (head.length >= 2 && head[0] === 0xff && (head[1]! & 0xe0) === 0xe0 && (head[1]! & 0x18) !== 0x08 && (head[1]! & 0x06) !== 0)
    return 'mp3';
  return undefined;
}

/** Byte rates of real PCM audio: 8 kHz 8-bit mono up to 192 kHz 32-bit stereo. */
const minPcmByteRate = 8_000;
const maxPcmByteRate = 1_536_000;

/**
 * Duration of a PCM WAV file from its header (`fmt ` byte rate, `data` size), walking the RIFF
 * chunks; undefined when the header is not within `head` or the size is the streaming
 * placeholder. `fileBytes` bounds a `data` size that claims more than was uploaded.
 */
export function wavSeconds(head: Uint8Array, fileBytes: number): number | undefined {
  const view = Buffer.from(head.buffer, head.byteOffset, head.byteLength);
  let byteRate: number | undefined;
  for (let at = 12; at + 8 <= view.length;) {
    const id = view.toString('latin1', at, at + 4);
    const size = view.readUInt32LE(at + 4);
    // Bounded to what real PCM can be: the header is the client's claim.
    if (id === 'fmt ' && at + 20 <= view.length) byteRate = Math.min(Math.max(view.readUInt32LE(at + 16), minPcmByteRate), maxPcmByteRate);
    if (id === 'data') {
      if (!byteRate) return undefined;
      const dataBytes = size === 0xffffffff || size === 0 ? fileBytes - at - 8 : Math.min(size, fileBytes - at - 8);
      return Math.max(0, dataBytes) / byteRate;
    }
    at += 8 + size + (size % 2);
  }
  return undefined;
}
