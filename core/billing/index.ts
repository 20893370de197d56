// Billing (docs/billing.md): card top-ups through the payment processor into the wallet ledger,
// saved cards, automatic top-up, the signed webhook, and who pays (the effective payer rule).
export * from './auto-topup.js';
export * from './auto-topup-store.js';
export * from './customers.js';
export * from './events.js';
export * from './follow-ups.js';
export * from './money.js';
export * from './payer.js';
export * from './organisation.js';
export * from './payments.js';
export * from './processor.js';
export * from './service.js';
export * from './settings.js';
export * from './user-limits.js';
