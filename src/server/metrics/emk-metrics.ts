import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Services } from '../../domain/create-services.js';

/** Seconds, from a fast request's millisecond up to a slow export's ten seconds. */
const SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** An SMTP hand-over waits for the relay's pool and rate, and for its answer: up to a minute (the socket timeout). */
const HAND_OVER_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Writes per group commit: one for a lone request, up to the 1,000 a group takes. */
const GROUP_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000];

/** What the metrics read of a process's services. */
export type MeteredServices = Pick<Services, 'db' | 'writer' | 'transport' | 'rateLimiter' | 'status'>;

/**
 * This process's Prometheus registry (docs/operations.md, Metrics and status). Three sources:
 * - what the server itself sees: every request, by the route pattern the router matched;
 * - what the domain's instances count and report (group commits, SMTP hand-overs, rate-limit refusals, the
 *   connection pools), read or watched here so the domain knows no metrics library;
 * - the shared queues (jobs, trigger outbox, messages), read from the database at each scrape: the same in
 *   every process of one database.
 * Node's own (memory, CPU, event-loop delay, garbage collection) come from prom-client's defaults.
 */
export function createEmkMetrics(services: MeteredServices) {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });

  const requests = new Counter({
    name: 'emk_http_requests_total',
    help: 'HTTP requests answered, by route pattern (never the raw URL), method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    registers,
  });
  const requestSeconds = new Histogram({
    name: 'emk_http_request_duration_seconds',
    help: 'Time from a request arriving to its reply being sent, by route pattern and method.',
    labelNames: ['route', 'method'] as const,
    buckets: SECONDS_BUCKETS,
    registers,
  });

  const groupSize = new Histogram({
    name: 'emk_group_commit_size',
    help: 'Writes (requests, import chunks) committed together in one group-commit transaction.',
    buckets: GROUP_SIZE_BUCKETS,
    registers,
  });
  const groupSeconds = new Histogram({
    name: 'emk_group_commit_duration_seconds',
    help: "A group commit's transaction, lock-conflict retries included.",
    buckets: SECONDS_BUCKETS,
    registers,
  });
  const handOverSeconds = new Histogram({
    name: 'emk_smtp_handover_duration_seconds',
    help: 'SMTP hand-overs to the relay by outcome (sent, rejected: 5xx for the recipient, temporary: retried later, error).',
    labelNames: ['outcome'] as const,
    buckets: HAND_OVER_BUCKETS,
    registers,
  });
  const unwatch = [
    services.writer.committedGroups.watch(({ items, seconds }) => {
      groupSize.observe(items);
      groupSeconds.observe(seconds);
    }),
    services.transport.handOvers.watch(({ outcome, seconds }) => handOverSeconds.observe({ outcome }, seconds)),
  ];

  const { rateLimiter, db } = services;
  new Counter({
    name: 'emk_rate_limit_refusals_total',
    help: 'Requests refused 429 by a rate-limit budget of this process, by scope (auth:ip, collect:site, webhook:integration, …).',
    labelNames: ['scope'] as const,
    registers,
    collect() {
      this.reset();
      for (const [scope, refused] of rateLimiter.refusals) this.inc({ scope }, refused);
    },
  });
  new Gauge({
    name: 'emk_db_pool_connections',
    help: "Database connections of this process's pools: used (lent out), free (idle), pending (requests waiting for one).",
    labelNames: ['pool', 'state'] as const,
    registers,
    collect() {
      this.reset();
      for (const { pool, used, free, pending } of db.poolUse()) {
        this.set({ pool, state: 'used' }, used);
        this.set({ pool, state: 'free' }, free);
        this.set({ pool, state: 'pending' }, pending);
      }
    },
  });
  new Gauge({
    name: 'emk_db_pool_max',
    help: "The size of each of this process's database pools.",
    labelNames: ['pool'] as const,
    registers,
    collect() {
      this.reset();
      for (const { pool, max } of db.poolUse()) this.set({ pool }, max);
    },
  });
  new Counter({
    name: 'emk_db_statements_total',
    help: 'Statements this process sent to the database (held writes travel several to a driver call).',
    registers,
    collect() {
      this.reset();
      this.inc(db.writeStats.statements);
    },
  });
  new Counter({
    name: 'emk_db_driver_calls_total',
    help: 'Calls this process made into the database driver.',
    registers,
    collect() {
      this.reset();
      this.inc(db.writeStats.driverCalls);
    },
  });

  // The shared queues: set from one read of the database per scrape (see scrape), the same in every process.
  const jobGauge = (name: string, help: string) => new Gauge({ name, help, labelNames: ['kind'] as const, registers });
  const jobsReady = jobGauge('emk_jobs_ready', 'Jobs due and waiting for a worker, by kind (all processes).');
  const jobsOldest = jobGauge('emk_jobs_oldest_ready_age_seconds', 'How long the oldest job waiting for a worker has been due, by kind (0: none waits).');
  const jobsRunning = jobGauge('emk_jobs_running', 'Jobs a worker holds now, by kind (all processes).');
  const jobsFailed = jobGauge('emk_jobs_failed', 'Jobs given up and kept for an operator, by kind.');
  const outboxPending = new Gauge({ name: 'emk_outbox_pending', help: 'Trigger facts not yet consumed by a worker.', registers });
  const outboxLag = new Gauge({ name: 'emk_outbox_lag_seconds', help: 'Age of the oldest trigger fact not yet consumed (0: none waits).', registers });
  const messages = new Gauge({
    name: 'emk_messages_total',
    help: 'Messages of every workspace by status (a count of rows: queued and sending go down as mail leaves).',
    labelNames: ['status'] as const,
    registers,
  });
  const databaseUp = new Gauge({ name: 'emk_database_up', help: "1 when this scrape's read of the shared queues answered, else 0.", registers });
  const queueGauges = [jobsReady, jobsOldest, jobsRunning, jobsFailed, outboxPending, outboxLag, messages];

  /** One read of the queues; a database that fails it leaves those gauges out and says so in emk_database_up. */
  async function readQueues(): Promise<unknown> {
    try {
      const queues = await services.status.queues();
      for (const gauge of queueGauges) gauge.reset();
      for (const { kind, ready, running, failed, oldest_ready_age_seconds } of queues.jobs) {
        jobsReady.set({ kind }, ready);
        jobsRunning.set({ kind }, running);
        jobsFailed.set({ kind }, failed);
        jobsOldest.set({ kind }, oldest_ready_age_seconds);
      }
      outboxPending.set(queues.outbox.pending);
      outboxLag.set(queues.outbox.lag_seconds);
      for (const [status, count] of Object.entries(queues.messages)) messages.set({ status }, count);
      databaseUp.set(1);
      return undefined;
    } catch (error) {
      for (const gauge of queueGauges) gauge.reset();
      databaseUp.set(0);
      return error;
    }
  }

  return {
    contentType: registry.contentType,

    /** Called once per answered request, with the pattern of the route that answered (undefined: none matched). */
    observeRequest(route: string | undefined, method: string, status: number, seconds: number): void {
      const pattern = route ?? '(unmatched)';
      requests.inc({ route: pattern, method, status: String(status) });
      requestSeconds.observe({ route: pattern, method }, seconds);
    },

    /** The exposition in Prometheus' text format, and why the queues could not be read (if they could not). */
    async scrape(): Promise<{ body: string; queuesUnread?: unknown }> {
      const queuesUnread = await readQueues();
      const body = await registry.metrics();
      return queuesUnread === undefined ? { body } : { body, queuesUnread };
    },

    /** Stops watching the domain (the app closes; the services may live on). */
    close(): void {
      for (const stop of unwatch) stop();
    },
  };
}

export type EmkMetrics = ReturnType<typeof createEmkMetrics>;
