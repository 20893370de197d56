// One processor customer per payer (`billing_customers`), created on first need with an
// idempotency key derived from the payer, so two replicas (or a retry after a crash) asking at
// once end with the same customer at the processor and the same row here. A recorded customer
// the processor no longer knows (deleted there, or the portal now uses other processor keys:
// test and live keys, another account, a restarted local test processor) is replaced rather
// than failing every payment of that payer.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import Stripe from 'stripe';

export interface CustomerRow {
  payer_id: string;
  processor_customer_id: string;
  default_payment_method_id: string | null;
}

const installIds = new WeakMap<object, Promise<string>>();

/**
 * This database's installation id (migration 038): part of every idempotency key the portal sends
 * the processor, so keys built from row ids (`customer:<payer>`, a payment id) never collide with
 * another deployment's on the same processor account, nor with this one's before a database reset.
 */
export function installId(knex: Knex): Promise<string> {
  let id = installIds.get(knex);
  if (!id) {
    id = (async () => {
      // Made on first use; replicas racing here all read back the one that was inserted first.
      const existing = (await knex('billing_installation').first('install_id')) as { install_id: string } | undefined;
      if (existing) return existing.install_id;
      await knex.transaction(async (trx) => {
        await trx.raw('lock table billing_installation in exclusive mode');
        if (!(await trx('billing_installation').first('install_id')))
          await trx('billing_installation').insert({ install_id: randomBytes(9).toString('base64url') });
      });
      return ((await knex('billing_installation').first('install_id')) as { install_id: string }).install_id;
    })();
    id.catch(() => installIds.delete(knex));
    installIds.set(knex, id);
  }
  return id;
}

export async function findCustomer(knex: Knex, payerId: string): Promise<CustomerRow | undefined> {
  return (await knex('billing_customers').where({ payer_id: payerId }).first()) as CustomerRow | undefined;
}

/** The payer's customer, created at the processor and recorded when missing. */
export async function ensureCustomer(
  knex: Knex,
  processor: Stripe,
  payerId: string,
  contact: { email: string | null; name: string | null },
): Promise<CustomerRow> {
  const existing = await findCustomer(knex, payerId);
  if (existing && (await customerExists(processor, existing.processor_customer_id))) return existing;
  if (existing)
    await knex('billing_customers').where({ payer_id: payerId, processor_customer_id: existing.processor_customer_id }).delete();
  const install = await installId(knex);
  const customer = await processor.customers.create(
    { ...(contact.email && { email: contact.email }), ...(contact.name && { name: contact.name }), metadata: { payer_id: payerId } },
    // The processor remembers a key for a day: a retry or a racing replica gets the same customer.
    {
      idempotencyKey: existing
        ? `customer:${install}:${payerId}:replaces:${existing.processor_customer_id}`
        : `customer:${install}:${payerId}`,
    },
  );
  await knex('billing_customers').insert({ payer_id: payerId, processor_customer_id: customer.id }).onConflict('payer_id').ignore();
  return (await findCustomer(knex, payerId))!;
}

/** Whether the processor still has this customer (deleted or unknown: no; anything else throws). */
async function customerExists(processor: Stripe, customerId: string): Promise<boolean> {
  try {
    const customer = await processor.customers.retrieve(customerId);
    return !('deleted' in customer && customer.deleted);
  } catch (error) {
    if (error instanceof Stripe.errors.StripeInvalidRequestError && (error.statusCode === 404 || error.code === 'resource_missing'))
      return false;
    throw error;
  }
}

export async function setLocalDefault(knex: Knex, payerId: string, paymentMethodId: string | null): Promise<void> {
  await knex('billing_customers')
    .where({ payer_id: payerId })
    .update({ default_payment_method_id: paymentMethodId, updated_at: new Date() });
}
