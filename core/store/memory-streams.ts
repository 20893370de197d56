import type { StreamEntry, StreamGroupInfo } from './types.js';

interface Pending {
  consumer: string;
  deliveredAt: number;
}

interface Group {
  lastDelivered: string;
  pending: Map<string, Pending>;
}

interface Stream {
  entries: StreamEntry[];
  lastMs: number;
  lastSeq: number;
  groups: Map<string, Group>;
  waiters: Set<() => void>;
}

function compareIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am === bm ? as - bs : am - bm;
}

/** In-process streams with consumer groups, pending lists and blocking reads, as Redis has them. */
export class MemoryStreams {
  private readonly streams = new Map<string, Stream>();

  constructor(private readonly clock: () => number = Date.now) {}

  /** Forgets every stream and group; blocked readers wake up and find nothing. */
  clear(): void {
    const streams = [...this.streams.values()];
    this.streams.clear();
    for (const s of streams) for (const wake of [...s.waiters]) wake();
  }

  private stream(name: string): Stream {
    let s = this.streams.get(name);
    if (!s) {
      s = { entries: [], lastMs: 0, lastSeq: -1, groups: new Map(), waiters: new Set() };
      this.streams.set(name, s);
    }
    return s;
  }

  private group(stream: string, group: string): Group {
    const g = this.streams.get(stream)?.groups.get(group);
    if (!g) throw new Error(`NOGROUP No such key '${stream}' or consumer group '${group}'`);
    return g;
  }

  add(name: string, fields: Record<string, string>, maxLen?: number): string {
    const s = this.stream(name);
    const now = this.clock();
    if (now > s.lastMs) {
      s.lastMs = now;
      s.lastSeq = 0;
    } else {
      s.lastSeq++;
    }
    const id = `${s.lastMs}-${s.lastSeq}`;
    s.entries.push({ id, fields: { ...fields } });
    if (maxLen !== undefined && s.entries.length > maxLen) s.entries.splice(0, s.entries.length - maxLen);
    for (const wake of [...s.waiters]) wake();
    return id;
  }

  createGroup(name: string, group: string): void {
    const s = this.stream(name);
    if (!s.groups.has(group)) s.groups.set(group, { lastDelivered: '0-0', pending: new Map() });
  }

  private deliverNew(name: string, group: string, consumer: string, count: number): StreamEntry[] {
    const s = this.stream(name);
    const g = this.group(name, group);
    const fresh = s.entries.filter((e) => compareIds(e.id, g.lastDelivered) > 0).slice(0, count);
    const now = this.clock();
    for (const e of fresh) g.pending.set(e.id, { consumer, deliveredAt: now });
    const last = fresh.at(-1);
    if (last) g.lastDelivered = last.id;
    return fresh.map((e) => ({ id: e.id, fields: { ...e.fields } }));
  }

  async readGroup(
    name: string,
    group: string,
    consumer: string,
    count: number,
    blockMs: number,
    closed: () => boolean,
  ): Promise<StreamEntry[]> {
    const first = this.deliverNew(name, group, consumer, count);
    if (first.length > 0 || blockMs <= 0) return first;
    const s = this.stream(name);
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        s.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, blockMs);
      s.waiters.add(done);
    });
    return closed() ? [] : this.deliverNew(name, group, consumer, count);
  }

  ack(name: string, group: string, ids: readonly string[]): number {
    const g = this.streams.get(name)?.groups.get(group);
    if (!g) return 0;
    let n = 0;
    for (const id of ids) if (g.pending.delete(id)) n++;
    return n;
  }

  claimIdle(name: string, group: string, consumer: string, minIdleMs: number, count: number): StreamEntry[] {
    const s = this.stream(name);
    const g = this.group(name, group);
    const now = this.clock();
    const claimed: StreamEntry[] = [];
    for (const [id, p] of [...g.pending].sort((a, b) => compareIds(a[0], b[0]))) {
      if (claimed.length >= count) break;
      if (now - p.deliveredAt < minIdleMs) continue;
      const entry = s.entries.find((e) => e.id === id);
      if (!entry) {
        g.pending.delete(id); // deleted from the stream: Redis drops it from the PEL on claim too
        continue;
      }
      g.pending.set(id, { consumer, deliveredAt: now });
      claimed.push({ id, fields: { ...entry.fields } });
    }
    return claimed;
  }

  delete(name: string, ids: readonly string[]): number {
    const s = this.streams.get(name);
    if (!s) return 0;
    const drop = new Set(ids);
    const before = s.entries.length;
    s.entries = s.entries.filter((e) => !drop.has(e.id));
    return before - s.entries.length;
  }

  info(name: string, group: string): StreamGroupInfo {
    const s = this.streams.get(name);
    return { length: s?.entries.length ?? 0, pending: s?.groups.get(group)?.pending.size ?? 0 };
  }

  /** Wakes every blocked reader (used on close). */
  wakeAll(): void {
    for (const s of this.streams.values()) for (const wake of [...s.waiters]) wake();
  }
}
