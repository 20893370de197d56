import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config/settings.js';
import { createProcessorClient, processorConfigFrom } from './processor.js';
import type { BillingSettings } from './settings.js';

const settings = (given: Partial<BillingSettings>) => given as BillingSettings;
const keys = { STRIPE_SECRET_KEY: 'sk_test_1', STRIPE_PUBLISHABLE_KEY: 'pk_test_1', STRIPE_WEBHOOK_SECRET: 'whsec_1' };

describe('processorConfigFrom', () => {
  it('is off without a secret key, and refuses stray processor settings then', () => {
    expect(processorConfigFrom(settings({}))).toBeUndefined();
    expect(() => processorConfigFrom(settings({ STRIPE_WEBHOOK_SECRET: 'whsec_1' }))).toThrow(/STRIPE_WEBHOOK_SECRET: set without/);
  });

  it('needs the publishable key and the webhook secret next to a secret key', () => {
    const error = (() => {
      try {
        processorConfigFrom(settings({ STRIPE_SECRET_KEY: 'sk_live_1' }));
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect(String(error)).toContain('STRIPE_PUBLISHABLE_KEY, STRIPE_WEBHOOK_SECRET: required');
  });

  it('says where the API is and whether the keys are test keys', () => {
    expect(processorConfigFrom(settings(keys))).toMatchObject({ mode: 'stripe', apiUrl: undefined, testMode: true });
    expect(
      processorConfigFrom(settings({ ...keys, STRIPE_SECRET_KEY: 'sk_live_1', SVC_STRIPE_API_URL: 'https://pay.example:8443' })),
    ).toMatchObject({
      mode: 'custom_api_url',
      testMode: false,
    });
  });

  it('builds a client for Stripe itself and for another base URL', () => {
    expect(createProcessorClient(processorConfigFrom(settings(keys))!)).toBeDefined();
    for (const url of ['http://127.0.0.1:12111', 'https://pay.example']) {
      const config = processorConfigFrom(settings({ ...keys, SVC_STRIPE_API_URL: url }))!;
      expect(createProcessorClient(config).checkout.sessions).toBeDefined();
    }
  });
});
