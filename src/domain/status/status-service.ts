import type { EventService } from '../events/event-service.js';
import type { JobQueue } from '../jobs/job-queue.js';
import type { MessageService } from '../messages/message-service.js';
import type { MessageStatus } from '../messages/message.schema.js';
import { systemClock, type Clock } from '../shared/time.js';
import type { TriggerOutbox } from '../triggers/trigger-outbox.js';
import type { Db } from '../db/database.js';

/** One kind of job: due and waiting for a worker, running, given up; how long the oldest waiting one is overdue. */
export interface JobKindStatus {
  kind: string;
  ready: number;
  running: number;
  failed: number;
  oldest_ready_age_seconds: number;
}

/** The queues every process shares, read from the database: what `GET /metrics` exports as its global gauges. */
export interface QueueStatus {
  jobs: JobKindStatus[];
  /** Trigger facts not yet consumed, and the age of the oldest (0: none waits). */
  outbox: { pending: number; lag_seconds: number };
  /** Every workspace's messages by status. */
  messages: Record<MessageStatus, number>;
}

/** Events that occurred, and messages handed over (or captured), over the last `minutes`, and per minute. */
export interface RecentRate {
  minutes: number;
  events: number;
  events_per_minute: number;
  messages_handed_over: number;
  messages_per_minute: number;
}

/** `emk status`: the queues at a glance, and the recent rates. */
export interface StatusOverview extends QueueStatus {
  at: string;
  recent: RecentRate[];
}

/** The windows of `emk status`'s recent rates. */
const RECENT_MINUTES = [5, 60];

const ageSeconds = (now: number, since: number | null) => (since === null ? 0 : Math.max(0, (now - since) / 1000));
const perMinute = (count: number, minutes: number) => Math.round((count / minutes) * 10) / 10;

/**
 * The operator's view of the shared queues (docs/operations.md, Metrics and status): jobs by kind, the trigger
 * outbox's lag, messages by status, each read by its noun through an index whose range is the backlog, not the
 * table (messages: an index read alone). The same for every process of a database: `GET /metrics` reads the
 * queues at each scrape, `emk status` adds the recent rates.
 */
export function createStatusService(deps: {
  knex: Db;
  jobs: Pick<JobQueue, 'backlog'>;
  outbox: Pick<TriggerOutbox, 'backlog'>;
  messages: Pick<MessageService, 'countByStatus' | 'handedOverSince'>;
  events: Pick<EventService, 'occurredSince'>;
  /** The kinds the worker runs: each is reported, with zeros when none waits. */
  jobKinds: readonly string[];
  clock?: Clock;
}) {
  const { knex, jobs, outbox, messages, events, jobKinds } = deps;
  const clock = deps.clock ?? systemClock;

  async function queues(): Promise<QueueStatus> {
    const now = clock();
    const backlog = await jobs.backlog(jobKinds);
    const facts = await outbox.backlog(knex);
    return {
      jobs: backlog.map(({ kind, ready, running, failed, oldestReadyAt }) => ({
        kind,
        ready,
        running,
        failed,
        oldest_ready_age_seconds: ageSeconds(now, oldestReadyAt),
      })),
      outbox: { pending: facts.pending, lag_seconds: ageSeconds(now, facts.oldestAt) },
      messages: await messages.countByStatus(),
    };
  }

  return {
    queues,

    async overview(): Promise<StatusOverview> {
      const now = clock();
      const current = await queues();
      const recent: RecentRate[] = [];
      for (const minutes of RECENT_MINUTES) {
        const since = now - minutes * 60_000;
        const eventCount = await events.occurredSince(since);
        const handedOver = await messages.handedOverSince(since);
        recent.push({
          minutes,
          events: eventCount,
          events_per_minute: perMinute(eventCount, minutes),
          messages_handed_over: handedOver,
          messages_per_minute: perMinute(handedOver, minutes),
        });
      }
      return { at: new Date(now).toISOString(), ...current, recent };
    },
  };
}

export type StatusService = ReturnType<typeof createStatusService>;
