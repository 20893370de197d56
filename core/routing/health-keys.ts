// Where the shared supplier circuit breaker keeps its state in the store (written by the
// gateway's SupplierHealth, read by the portal's operations views): a failure counter with the
// breaker's window as expiry, and an `open until` epoch-ms value while the circuit is open.

/** Store key of a supplier's failure counter. */
export const supplierFailuresKey = (supplier: string) => `health:failures:${supplier}`;

/** Store key of a supplier's open-circuit deadline (epoch ms). */
export const supplierOpenKey = (supplier: string) => `health:open:${supplier}`;

/** Store key of a pooled credential's sideline deadline (epoch ms), while it is out of rotation. */
export const credentialSidelinedKey = (supplier: string, credential: string) => `health:credential:${supplier}:${credential}`;
