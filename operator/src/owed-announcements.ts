/**
 * Announcements the operator owes the gateways: a row was written (or deleted) but announcing
 * it — store cache and pub/sub — failed. Retrying the reconcile would not announce again: it
 * finds the row already as wanted and writes nothing, so gateways would go on using their
 * cached copy (a suspended or deleted key still authenticating) until the cache entry expires.
 * The debt is therefore kept here and paid before any other work by the next reconcile, of
 * any object, or sweep; the work queue retries the reconcile that failed, so it is paid as
 * soon as the store answers again, and an unchanged resync still costs nothing.
 *
 * Paying a debt evicts (never writes a value back), so it can race with newer announcements
 * harmlessly. Held in memory: a crash between the write and its announcement still loses it,
 * and then the cache TTL bounds how long gateways may use the old copy.
 */
export class OwedAnnouncements {
  /** What is owed, each with the number of the announcement that left it owed. */
  private readonly owed = new Map<string, number>();
  private counter = 0;

  /** `evict(id)` announces that `id` changed without saying how (readers reload it). */
  constructor(private readonly evict: (id: string) => Promise<void>) {}

  /** Runs `announcement` about `id`; when it throws, an eviction of `id` stays owed. */
  async announce(id: string, announcement: () => Promise<void>): Promise<void> {
    const number = ++this.counter;
    this.owed.set(id, number);
    await announcement();
    if (this.owed.get(id) === number) this.owed.delete(id);
  }

  /** Pays every debt; throws (keeping what is unpaid) when the store still fails. */
  async payAll(): Promise<void> {
    for (const [id, number] of [...this.owed]) {
      await this.evict(id);
      // Owed again meanwhile (a newer write whose announcement failed): that debt stays.
      if (this.owed.get(id) === number) this.owed.delete(id);
    }
  }

  /** How many announcements are owed (tests, logs). */
  get size(): number {
    return this.owed.size;
  }
}
