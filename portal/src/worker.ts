// Entry point of the portal's background worker as its own Deployment (`npm run worker`;
// docs/reports.md "Jobs"): the same settings as the portal, its queues worked here, so the
// portal pods can run with SVC_PORTAL_WORKER=false. Several workers share the queue safely.
import { hostname } from 'node:os';
import { createLogger } from '../../core/telemetry/index.js';
import { ConfigError, parsePortalSettings, stopOnSignals } from '../../core/config/index.js';
import { databaseTargetFromSettings, openDatabase } from '../../core/db/index.js';
import { openJobRunner, workPortalJobs } from './jobs.js';
import { createMailer } from './mail/mailer.js';

async function main(): Promise<void> {
  const settings = parsePortalSettings(process.env);
  const logger = createLogger({ service: 'portal-worker', level: settings.LOG_LEVEL });
  const database = await openDatabase(databaseTargetFromSettings(settings));
  await database.migrate();
  const jobs = await openJobRunner(database, logger);
  const mailer = createMailer({
    smtpUrl: settings.SVC_SMTP_URL,
    from: settings.SVC_MAIL_FROM,
    dataDir: settings.SVC_DATA_DIR,
    announce: (line) => console.log(line),
    logger,
  });
  const baseUrl = settings.SVC_PORTAL_BASE_URL ?? 'http://localhost:3000';
  await workPortalJobs(jobs, { knex: database.knex, logger, dataDir: settings.SVC_DATA_DIR, clock: Date.now, mailer, baseUrl });
  stopOnSignals(
    async () => {
      await jobs.stop();
      mailer.close();
      await database.close();
    },
    'finishing jobs in progress',
    { ready: `portal worker ${hostname()}-${process.pid} working the job queue` },
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? `configuration error: ${error.message}` : error);
  process.exit(1);
});
