// Which store keys live together (docs/architecture.md "Store sharding").
//
// A store key names the entity it belongs to in braces: `rate:{key_abc}`, `spend:{org:5}:m:2026-11`,
// `funds:{org:5}`. On Redis Cluster the braces are a hash tag: every key of one entity hashes to
// the same slot, so a script over one entity's keys runs on one shard. On a single Redis (and in
// the in-process store) the braces are dropped, so the counters, wallet mirrors, rate windows and
// key cache keep the names they had before cluster support (docs/architecture.md lists the two
// short-lived caches that were renamed).
//
// Only the first `{...}` of a key counts, as in Redis Cluster; a key whose name carries outside
// input puts its tag before that input (ids that reach tags never contain braces: key ids,
// payers and spend groups are validated slugs).

/** The shard tag of `entity`, to embed in a key name. */
export function shardTag(entity: string): string {
  return `{${entity}}`;
}

/** Where the first tag's braces are, or undefined: Redis hashes the whole key when they are empty or unclosed. */
function firstTag(key: string): { open: number; close: number } | undefined {
  const open = key.indexOf('{');
  if (open === -1) return undefined;
  const close = key.indexOf('}', open + 1);
  return close === -1 || close === open + 1 ? undefined : { open, close };
}

/** The tag of a key (what Redis Cluster hashes), or the whole key when it has none. */
export function tagOf(key: string): string {
  const tag = firstTag(key);
  return tag ? key.slice(tag.open + 1, tag.close) : key;
}

/** The key as a single Redis stores it: the first tag's braces dropped (`rate:{k}` → `rate:k`). */
export function untagged(key: string): string {
  const tag = firstTag(key);
  return tag ? key.slice(0, tag.open) + key.slice(tag.open + 1, tag.close) + key.slice(tag.close + 1) : key;
}

const slotCount = 16384;

/** CRC16-XMODEM, the checksum Redis Cluster slots keys by. */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** The Redis Cluster slot of a key (its tag's, when it has one). */
export function keySlot(key: string): number {
  return crc16(Buffer.from(tagOf(key), 'utf8')) % slotCount;
}
