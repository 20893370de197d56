import { createHash } from 'node:crypto';
import type { Store } from '../../../core/store/index.js';

/** Where a request's session identity came from (docs/spec-conformance.md 2.6 precedence, then the heuristic). */
export type SessionSource = 'header' | 'session_id' | 'sticky_key' | 'conversation';

/** A request's session, if it has one. */
export interface Session {
  id: string;
  source: SessionSource;
}

/** The identifiers a request carries, and the text the heuristic may use. */
export interface SessionInputs {
  header: string | undefined;
  sessionId: string | undefined;
  stickyKey: string | undefined;
  /** System prompt + first user message: identical across the turns of one conversation. */
  conversationSeed: string | undefined;
}

/**
 * The request's session: `X-Session-Id` > `metadata.session_id` > `metadata.sticky_key`
 * (docs/spec-conformance.md 2.6); without any, a conversation is recognised by a hash of its system prompt and first
 * user message, which every later turn repeats.
 */
export function sessionOf(inputs: SessionInputs): Session | undefined {
  if (inputs.header) return { id: inputs.header, source: 'header' };
  if (inputs.sessionId) return { id: inputs.sessionId, source: 'session_id' };
  if (inputs.stickyKey) return { id: inputs.stickyKey, source: 'sticky_key' };
  if (inputs.conversationSeed)
    return { id: createHash('sha256').update(inputs.conversationSeed).digest('base64url'), source: 'conversation' };
  return undefined;
}

/**
 * Which supplier a session is pinned to, in the shared store so every replica agrees. Keys are
 * scoped by API key so two tenants choosing the same session id never share a pin.
 */
export class SessionAffinity {
  constructor(
    private readonly store: Store,
    private readonly ttlMs: number,
  ) {}

  private key(keyId: string, session: Session): string {
    // Client-chosen ids are hashed to bound the key's length; a conversation id already is a hash.
    const id = session.source === 'conversation' ? session.id : createHash('sha256').update(session.id).digest('base64url');
    return `session:${keyId}:${id}`;
  }

  /** The supplier the session is pinned to, if any. */
  pinned(keyId: string, session: Session): Promise<string | null> {
    return this.store.get(this.key(keyId, session));
  }

  /** Pins (or re-pins, after a failover) the session to the supplier that answered. */
  async pin(keyId: string, session: Session, supplier: string): Promise<void> {
    await this.store.set(this.key(keyId, session), supplier, { ttlMs: this.ttlMs });
  }
}
