// Server-sent-events writer. Each frame is written as soon as it is made (no buffering), and the
// cut-after fault is enforced here so every streaming endpoint gets it for free.
import type { ServerResponse } from 'node:http';
import type { Exchange } from './http.js';

/** Sends the status line and headers, then drops the connection: a stream cut after 0 events. */
export function cutAfterHeaders(res: ServerResponse): void {
  res.flushHeaders();
  const socket = res.socket;
  // An empty socket write completes after the headers went out, so the client sees the 200.
  if (socket) socket.write('', () => res.destroy());
  else res.destroy();
}

/** Writes SSE frames for one response and applies the `cutAfter` fault. */
export class SseStream {
  private sent = 0;
  private stopped = false;

  constructor(private readonly ex: Exchange) {
    ex.res.writeHead(200, {
      ...ex.headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    if (ex.cutAfter === 0) {
      this.stopped = true;
      cutAfterHeaders(ex.res);
    }
  }

  /** True while frames are still being delivered (not cut, client still there). */
  get open(): boolean {
    return !this.stopped && !this.ex.res.destroyed;
  }

  /**
   * Sends one frame: `event: <name>` + `data:` when a name is given, a bare `data:` frame when
   * it is null (OpenAI chat). Returns false once the stream was cut or the client went away.
   */
  send(event: string | null, data: unknown): boolean {
    if (!this.open) return false;
    const json = typeof data === 'string' ? data : JSON.stringify(data);
    const frame = event === null ? `data: ${json}\n\n` : `event: ${event}\ndata: ${json}\n\n`;
    this.sent++;
    const res = this.ex.res;
    if (this.ex.cutAfter !== undefined && this.sent >= this.ex.cutAfter) {
      // Destroy only after the frame reached the socket, so the client really gets N events.
      this.stopped = true;
      res.write(frame, () => res.destroy());
      return false;
    }
    res.write(frame);
    return true;
  }

  /** Ends the response normally (no-op after a cut). */
  end(): void {
    if (this.open) this.ex.res.end();
  }
}
