// A small streaming multipart/form-data reader for the transcription upload. The file part is
// hashed and counted as it arrives and never held in memory; text fields are kept (capped).
import { createHash, type Hash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** What the simulator keeps of an upload: the fields and a digest of the `file` part. */
export interface MultipartUpload {
  /** Each field's last value. */
  fields: Record<string, string>;
  /** Every value of fields sent more than once (e.g. `timestamp_granularities[]`), in order. */
  repeated: Record<string, string[]>;
  /** Whether a part named `file` was present at all. */
  hasFile: boolean;
  fileBytes: number;
  filename: string | null;
  fileContentType: string | null;
  /** Hex sha256 of the file bytes. */
  sha256: string;
  /** First bytes of the file, enough to read a WAV header. */
  head: Buffer;
}

/** A malformed or oversized upload, with the HTTP status to answer. */
export class MultipartError extends Error {
  constructor(
    message: string,
    readonly status: 400 | 413,
  ) {
    super(message);
  }
}

const HEAD_BYTES = 64;
const MAX_FIELD_BYTES = 1 << 20;
const MAX_HEADER_BYTES = 16 << 10;
const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');
const EMPTY = Buffer.alloc(0);

interface Part {
  name: string;
  isFile: boolean;
  chunks: Buffer[];
  size: number;
}

/** Reads a multipart request body; rejects with MultipartError on bad framing or a too-large file. */
export function parseMultipart(req: IncomingMessage, maxFileBytes: number): Promise<MultipartUpload> {
  return new Promise((resolve, reject) => {
    const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(req.headers['content-type'] ?? '');
    const b = boundary?.[1] ?? boundary?.[2];
    if (!b) {
      req.resume();
      reject(new MultipartError('Content-Type must be multipart/form-data with a boundary', 400));
      return;
    }
    const parser = new MultipartParser(b, maxFileBytes);
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      try {
        parser.write(chunk);
      } catch (err) {
        failed = true;
        req.pause();
        reject(err);
      }
    });
    req.on('end', () => {
      if (failed) return;
      try {
        resolve(parser.finish());
      } catch (err) {
        reject(err);
      }
    });
    req.on('error', (err) => {
      if (!failed) reject(err);
      failed = true;
    });
  });
}

class MultipartParser {
  private buf: Buffer = EMPTY;
  private state: 'preamble' | 'after-boundary' | 'headers' | 'body' | 'done' = 'preamble';
  private readonly dashBoundary: Buffer;
  private readonly delimiter: Buffer;
  private part: Part | null = null;
  // Without a prototype: a field named `constructor` or `__proto__` is a field like any other.
  private readonly fields: Record<string, string> = Object.create(null) as Record<string, string>;
  private readonly repeated: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  private readonly hash: Hash = createHash('sha256');
  private fileBytes = 0;
  private hasFile = false;
  private filename: string | null = null;
  private fileContentType: string | null = null;
  private head: Buffer = EMPTY;

  constructor(
    boundary: string,
    private readonly maxFileBytes: number,
  ) {
    this.dashBoundary = Buffer.from(`--${boundary}`);
    this.delimiter = Buffer.from(`\r\n--${boundary}`);
  }

  write(chunk: Buffer): void {
    this.buf = this.buf.length > 0 ? Buffer.concat([this.buf, chunk]) : chunk;
    this.run();
  }

  finish(): MultipartUpload {
    if (this.state !== 'done') throw new MultipartError('Malformed multipart body: missing closing boundary', 400);
    return {
      // Copied into plain objects (a spread defines `__proto__` as a field, never a prototype).
      fields: { ...this.fields },
      repeated: { ...this.repeated },
      hasFile: this.hasFile,
      fileBytes: this.fileBytes,
      filename: this.filename,
      fileContentType: this.fileContentType,
      sha256: this.hash.digest('hex'),
      head: this.head,
    };
  }

  private run(): void {
    for (;;) {
      switch (this.state) {
        case 'preamble': {
          const at = this.buf.indexOf(this.dashBoundary);
          if (at === -1) {
            this.keepTail(this.dashBoundary.length - 1);
            return;
          }
          this.buf = this.buf.subarray(at + this.dashBoundary.length);
          this.state = 'after-boundary';
          break;
        }
        case 'after-boundary': {
          if (this.buf.length < 2) return;
          if (this.buf[0] === 0x2d && this.buf[1] === 0x2d) {
            this.state = 'done';
            this.buf = EMPTY;
            return;
          }
          if (this.buf[0] !== CRLF[0] || this.buf[1] !== CRLF[1]) throw new MultipartError('Malformed multipart boundary line', 400);
          this.buf = this.buf.subarray(2);
          this.state = 'headers';
          break;
        }
        case 'headers': {
          const at = this.buf.indexOf(HEADER_END);
          if (at === -1) {
            if (this.buf.length > MAX_HEADER_BYTES) throw new MultipartError('Multipart part headers too large', 400);
            return;
          }
          this.startPart(this.buf.subarray(0, at).toString('utf8'));
          this.buf = this.buf.subarray(at + HEADER_END.length);
          this.state = 'body';
          break;
        }
        case 'body': {
          const at = this.buf.indexOf(this.delimiter);
          if (at === -1) {
            // Hold back a possible partial delimiter at the end of the buffer.
            const safe = this.buf.length - (this.delimiter.length - 1);
            if (safe > 0) {
              this.data(this.buf.subarray(0, safe));
              this.buf = this.buf.subarray(safe);
            }
            return;
          }
          this.data(this.buf.subarray(0, at));
          this.endPart();
          this.buf = this.buf.subarray(at + this.delimiter.length);
          this.state = 'after-boundary';
          break;
        }
        case 'done':
          return;
      }
    }
  }

  private keepTail(n: number): void {
    if (this.buf.length > n) this.buf = this.buf.subarray(this.buf.length - n);
  }

  private startPart(rawHeaders: string): void {
    let name = '';
    let filename: string | null = null;
    let contentType: string | null = null;
    for (const line of rawHeaders.split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon === -1) continue;
      const key = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (key === 'content-disposition') {
        name = /\bname="([^"]*)"/i.exec(value)?.[1] ?? '';
        filename = /\bfilename="([^"]*)"/i.exec(value)?.[1] ?? null;
      } else if (key === 'content-type') {
        contentType = value;
      }
    }
    const isFile = name === 'file';
    if (isFile) {
      this.hasFile = true;
      this.filename = filename;
      this.fileContentType = contentType;
    }
    this.part = { name, isFile, chunks: [], size: 0 };
  }

  private data(chunk: Buffer): void {
    const part = this.part;
    if (!part || chunk.length === 0) return;
    part.size += chunk.length;
    if (part.isFile) {
      this.fileBytes += chunk.length;
      if (this.fileBytes > this.maxFileBytes) throw new MultipartError(`File exceeds ${this.maxFileBytes} bytes`, 413);
      this.hash.update(chunk);
      if (this.head.length < HEAD_BYTES) {
        this.head = Buffer.concat([this.head, chunk.subarray(0, HEAD_BYTES - this.head.length)]);
      }
    } else if (part.size <= MAX_FIELD_BYTES) {
      part.chunks.push(chunk);
    } else {
      throw new MultipartError(`Form field '${part.name}' is too large`, 413);
    }
  }

  private endPart(): void {
    const part = this.part;
    if (part && !part.isFile && part.name) {
      const value = Buffer.concat(part.chunks).toString('utf8');
      const earlier = this.fields[part.name];
      if (earlier !== undefined) (this.repeated[part.name] ??= [earlier]).push(value);
      this.fields[part.name] = value;
    }
    this.part = null;
  }
}
