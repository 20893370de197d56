// Codes the gateway itself produces that are not in the gateway API's catalogue (catalogue.ts,
// which holds the specification's lists and nothing else): another API's own code, kept because
// that API's SDK acts on it. Listed in docs/errors.md like the catalogue (render-docs.ts), built
// only through ApiError.foreign, so a code the gateway makes is never undocumented.

/** One code from another API: its status, default message, who defines it and what the client does. */
export interface ForeignCodeEntry {
  readonly status: number;
  readonly message: string;
  readonly origin: string;
  readonly action: string;
}

/** Every code the gateway produces outside the catalogue, as data. */
export const foreignCodes = {
  thread_unsupported_request: {
    status: 400,
    message: 'The model is served through a supplier that keeps no Anthropic threads',
    origin: "Anthropic's Messages API; the Anthropic SDK raises it as ThreadUnsupportedRequestError",
    action: 'Send the whole conversation in "messages", without "thread" (details.unsupported names the field).',
  },
} as const satisfies Readonly<Record<string, ForeignCodeEntry>>;

/** A code the gateway produces outside the catalogue. */
export type ForeignCode = keyof typeof foreignCodes;
