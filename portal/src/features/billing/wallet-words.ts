import type { PayerSource } from '../../../../core/billing/payer.js';

/**
 * Whose wallet pays, in words for the person reading the billing pages: the wallet's id
 * (`user:42`, `project:7`) is the Management API's reference, not something a person recognises.
 */
export function walletWords(source: PayerSource): string {
  switch (source) {
    case 'caller':
      return 'your own wallet';
    case 'organisation_billing_user':
      return "your organisation's billing user's wallet";
    case 'delegated_user':
      return 'the wallet of the user your billing is delegated to';
    case 'project':
      return "the project's wallet";
  }
}
