// Test helper: the official `stripe` library pointed at a local test processor.
import Stripe from 'stripe';
import type { LocalTestProcessor } from './index.js';

/** A Stripe client for `processor`, without retries or telemetry. */
export function stripeClientOf(processor: LocalTestProcessor): Stripe {
  const url = new URL(processor.url);
  return new Stripe(processor.secretKey, { host: url.hostname, port: url.port, protocol: 'http', maxNetworkRetries: 0, telemetry: false });
}
