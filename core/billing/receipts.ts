// The receipt emailed for each card payment that credited a wallet (a checkout or an automatic
// top-up): what the card was charged, the card processing fee within it, what reached the wallet.
// It goes to who paid by card and to the wallet's holder (a member topping up the organisation's
// billing user's wallet: both), and the carrier copies the billing email of an organisation the
// holder pays for — as the billing page promises. Sent at most once: after the commit that
// credited the payment, never retried (a redelivered event is a duplicate, and sends nothing).
import { centsToNano, formatCents } from './money.js';
import type { FollowUp } from './follow-ups.js';
import { payerUserId } from './payer.js';

export interface ReceiptFacts {
  paymentId: number;
  /** When the payment was credited. */
  at: Date;
  chargedCents: number;
  feeCents: number;
  creditNano: number;
  automatic: boolean;
}

/** The receipt emails for a payment: to `paidBy` (null when made at the processor) and to the wallet's holder. */
export function receiptFollowUp(paidBy: number | null | undefined, payerId: string, facts: ReceiptFacts): FollowUp[] {
  const recipients = new Set([paidBy, payerUserId(payerId)].filter((id): id is number => id !== null && id !== undefined));
  if (recipients.size === 0) return [];
  const credited = formatCents(Math.round(facts.creditNano / centsToNano(1)));
  const text = [
    facts.automatic ? 'An automatic top-up was paid.' : 'Thank you: the payment was received.',
    '',
    `Payment:              ${facts.paymentId}`,
    `Date:                 ${facts.at.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    `Card charged:         ${formatCents(facts.chargedCents)}`,
    `  card processing fee ${formatCents(facts.feeCents)}`,
    `Added to the wallet:  ${credited}`,
    '',
    'The billing page lists this payment with the others.',
  ].join('\n');
  return [...recipients].map((userId) => ({
    kind: 'email' as const,
    userId,
    subject: `Receipt: ${credited} added to the wallet`,
    text,
    path: '/dashboard/billing',
  }));
}
