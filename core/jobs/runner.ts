// The background job runner (docs/reports.md "Jobs"): pg-boss, a PostgreSQL-backed queue, so
// jobs survive restarts and each is taken by one worker across replicas (SKIP LOCKED). Handlers
// must be idempotent: delivery is at least once (a worker that dies mid-job has it retried
// after `expireInSeconds`). It runs inside the portal by default (SVC_PORTAL_WORKER) or alone
// (`npm run worker`). The queue's tables live in their own schema, apart from the migrations.
import PgBoss from 'pg-boss';
import type { ConnectionBounds } from '../db/index.js';

/** What a queue's jobs do; thrown errors are retried with backoff up to `retryLimit`. */
export type JobHandler<T> = (data: T, job: { id: string; retryCount: number }) => Promise<void>;

export interface QueueOptions {
  retryLimit?: number;
  /** A job still active after this long is taken as lost (its worker died) and retried. */
  expireInSeconds?: number;
  /** How often an idle worker looks for jobs. */
  pollingIntervalSeconds?: number;
}

export interface JobRunnerOptions {
  logger: { warn(facts: object, message: string): void; error(facts: object, message: string): void };
  /** The schema of pg-boss's tables (default svc_jobs). */
  schema?: string;
  /** pg connection options for its pool (core/db's connectionBounds: how long reaching PostgreSQL may take). */
  connection?: ConnectionBounds;
}

export class JobRunner {
  private readonly boss: PgBoss;
  private started = false;

  constructor(
    connectionString: string,
    private readonly options: JobRunnerOptions,
  ) {
    // pg-boss hands its options to pg's Pool, which reads the connection options its types omit.
    const config: PgBoss.ConstructorOptions = {
      connectionString,
      max: 3,
      schema: options.schema ?? 'svc_jobs',
      application_name: 'svc-jobs',
    };
    this.boss = new PgBoss(Object.assign(config, options.connection));
    this.boss.on('error', (error: Error) => options.logger.warn({ err: error.message }, 'job queue error (retrying)'));
  }

  async start(): Promise<void> {
    await this.boss.start();
    this.started = true;
  }

  /** Creates the queue (idempotent) and starts taking its jobs with `handler`. */
  async work<T extends object>(queue: string, handler: JobHandler<T>, options: QueueOptions = {}): Promise<void> {
    await this.ensureQueue(queue, options);
    await this.boss.work<T>(queue, { pollingIntervalSeconds: options.pollingIntervalSeconds ?? 1, batchSize: 1 }, async ([job]) => {
      if (!job) return;
      try {
        await handler(job.data, { id: job.id, retryCount: (job as { retryCount?: number }).retryCount ?? 0 });
      } catch (error) {
        this.options.logger.error({ err: error instanceof Error ? error.message : String(error), queue, job: job.id }, 'job failed');
        throw error;
      }
    });
  }

  /** Creates the queue without working it (a replica that only sends). */
  async ensureQueue(queue: string, options: QueueOptions = {}): Promise<void> {
    await this.boss.createQueue(queue, {
      name: queue,
      retryLimit: options.retryLimit ?? 3,
      retryBackoff: true,
      retryDelay: 2,
      expireInSeconds: options.expireInSeconds ?? 15 * 60,
    });
  }

  /** Queues a job; resolves with its id. */
  async send<T extends object>(queue: string, data: T): Promise<string> {
    const id = await this.boss.send(queue, data);
    if (!id) throw new Error(`the job queue refused a job for ${queue}`);
    return id;
  }

  /** A job's state in the queue (created, active, retry, completed, failed…), or undefined once archived. */
  async state(queue: string, id: string): Promise<string | undefined> {
    return (await this.boss.getJobById(queue, id))?.state;
  }

  /**
   * Runs `queue` on a cron schedule (UTC): pg-boss's clock fires each due minute once across every
   * replica. The job it sends is worked like any other.
   */
  async every(queue: string, cron: string, handler: JobHandler<object>, options: QueueOptions = {}): Promise<void> {
    await this.work(queue, handler, options);
    await this.boss.schedule(queue, cron, {}, { tz: 'UTC' });
  }

  /** Stops taking jobs; jobs in progress get `graceMs` to finish, then are failed for a retry. */
  async stop(graceMs = 5_000): Promise<void> {
    if (!this.started) return;
    this.started = false;
    await this.boss.stop({ graceful: true, wait: true, timeout: Math.max(1_000, graceMs) });
  }
}
