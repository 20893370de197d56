// The receipt a payer is emailed for each card payment that credited a wallet (a checkout or an
// automatic top-up): what the card was charged, the card processing fee within it, what reached
// the wallet. The billing page promises receipts to the billing user and the billing email.
import { centsToNano, formatCents } from './money.js';
import type { FollowUp } from './follow-ups.js';

export interface ReceiptFacts {
  paymentId: number;
  /** When the payment was credited. */
  at: Date;
  chargedCents: number;
  feeCents: number;
  creditNano: number;
  automatic: boolean;
}

/** The receipt email for `userId` (none when the payment has no user: made at the processor). */
export function receiptFollowUp(userId: number | null | undefined, facts: ReceiptFacts): FollowUp[] {
  if (userId === null || userId === undefined) return [];
  const credited = formatCents(Math.round(facts.creditNano / centsToNano(1)));
  const text = [
    facts.automatic ? 'Your automatic top-up was paid.' : 'Thank you: your payment was received.',
    '',
    `Payment:              ${facts.paymentId}`,
    `Date:                 ${facts.at.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    `Card charged:         ${formatCents(facts.chargedCents)}`,
    `  card processing fee ${formatCents(facts.feeCents)}`,
    `Added to the wallet:  ${credited}`,
    '',
    'The billing page lists this payment with the others.',
  ].join('\n');
  return [{ kind: 'email', userId, subject: `Receipt: ${credited} added to your wallet`, text, path: '/dashboard/billing' }];
}
