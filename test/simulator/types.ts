// Public types of the simulator (re-exported by server.ts).

/** Faults applied to requests; per-request `x-sim-*` headers override them field by field. */
export interface SimulatorFaults {
  /** Delay before answering, in milliseconds. */
  latencyMs?: number;
  /** Answer with this error status, in the family's error format. */
  status?: 429 | 500 | 502 | 503 | 529;
  /** `Retry-After` seconds sent with the status fault (429 always gets one, default 1). */
  retryAfterSeconds?: number;
  /** Accept the request and never answer (until the client leaves or close()). */
  hang?: boolean;
  /** Streaming: send this many events (or audio chunks), then destroy the socket. */
  cutAfterEvents?: number;
  /** Only the first N requests after setFaults get the status fault, then requests succeed. */
  failFirst?: number;
}

/** Options of startSimulator. */
export interface SimulatorOptions {
  /** Interface to bind, default 127.0.0.1. */
  host?: string;
  /** Port, default 0 (ephemeral). */
  port?: number;
  /** Instance name, echoed in the `x-sim-instance` header of every response. */
  name?: string;
  /** When set, require `Authorization: Bearer <k>` or `x-api-key: <k>`, else 401. */
  apiKey?: string;
  /** Initial instance faults. */
  faults?: SimulatorFaults;
  /** Default embedding size, 16. */
  embeddingDimensions?: number;
}

/** A request as the simulator received it. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** Parsed JSON; for multipart `{fields, fileBytes, filename}`; raw text when the JSON was invalid. */
  body: unknown;
  /** Date.now() when the body had been read. */
  at: number;
}

/** A started simulator. */
export interface RunningSimulator {
  /** Base URL such as http://127.0.0.1:PORT (no trailing slash); endpoints live under `/v1`. */
  url: string;
  port: number;
  name: string;
  /** The last 200 recorded requests, oldest first (health and `/_sim/*` calls are not recorded). */
  requests: RecordedRequest[];
  /** Replaces the instance faults (undefined clears them) and restarts the failFirst count. */
  setFaults(f: SimulatorFaults | undefined): void;
  /** Stops listening and destroys every open socket, including keep-alive and hung ones. */
  close(): Promise<void>;
}
