// Billing's running parts in the portal process: the processor client (or none), the service
// the routes call, and the automatic top-up watcher.
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { ActivityLog } from '../../../../core/activity/index.js';
import {
  AutoTopup,
  BillingService,
  createProcessorClient,
  processorConfigFrom,
  startAutoTopupWatcher,
  type Processor,
} from '../../../../core/billing/index.js';
import type { ResolvedPortalSettings } from '../../../../core/config/index.js';
import type { UserRepository } from '../../../../core/identity/index.js';
import type { Store } from '../../../../core/store/index.js';
import type { Mailer } from '../../mail/mailer.js';
import { actionMessage } from '../../mail/mailer.js';

/** What the billing routes use, and how to stop it. */
export interface BillingRuntime {
  service: BillingService;
  autoTopup: AutoTopup;
  /** Origin of the processor's hosted pages (billing forms redirect there), when configured. */
  hostedPageOrigin: string | undefined;
  stop(): Promise<void>;
}

/** Builds billing from the settings; throws ConfigError for a half-configured processor. */
export async function startBilling(deps: {
  settings: ResolvedPortalSettings;
  knex: Knex;
  store: Store;
  logger: Logger;
  clock: () => number;
  mailer: Mailer;
  users: UserRepository;
  activity: ActivityLog;
}): Promise<BillingRuntime> {
  const { settings } = deps;
  const config = processorConfigFrom(settings);
  if (config?.testMode) deps.logger.warn({ api: config.apiUrl ?? 'stripe' }, 'billing runs with TEST processor keys: no real payments');
  const processor: Processor | undefined = config && { client: createProcessorClient(config), config };
  const service = new BillingService({
    knex: deps.knex,
    store: deps.store,
    settings,
    processor,
    baseUrl: settings.SVC_PORTAL_BASE_URL,
    secret: settings.SVC_KEY_PEPPER,
    clock: deps.clock,
    logger: deps.logger,
    carrier: {
      activity: (entry) => deps.activity.record(entry, new Date(deps.clock())),
      email: async (userId, message) => {
        const user = await deps.users.findById(userId);
        if (!user) return;
        const link = `${settings.SVC_PORTAL_BASE_URL}${message.path}`;
        // An organisation this user pays for may want its billing mail elsewhere too.
        const copies = (await deps
          .knex('organisations')
          .where({ billing_user_id: userId })
          .whereNotNull('billing_email')
          .pluck('billing_email')) as string[];
        // After the answer (a webhook's, a page's): the ledger is committed whatever the mail server does.
        for (const to of new Set([user.email, ...copies]))
          deps.mailer.sendLater(
            actionMessage(
              to,
              message.subject,
              message.text,
              'Open billing',
              link,
              'You receive this because it concerns a wallet you pay from or manage.',
            ),
            `billing email "${message.subject}"`,
          );
      },
    },
  });
  const autoTopup = new AutoTopup({
    knex: deps.knex,
    store: deps.store,
    settings,
    processor,
    billing: service,
    clock: deps.clock,
    logger: deps.logger,
  });
  const watcher = startAutoTopupWatcher(autoTopup, settings.SVC_AUTO_TOPUP_CHECK_MS, deps.logger);
  return {
    service,
    autoTopup,
    hostedPageOrigin: config ? (config.apiUrl ? new URL(config.apiUrl).origin : 'https://checkout.stripe.com') : undefined,
    stop: async () => {
      await watcher.stop();
    },
  };
}
