import type { Knex } from 'knex';
import type { Database } from '../db/database.js';
import { systemClock, type Clock } from '../shared/time.js';
import type { OutboxFact, TriggerOutbox } from './trigger-outbox.js';

/**
 * A noun that acts on outbox facts (flows enrol, segments re-evaluate). It writes in the dispatcher's
 * transaction, the one that marks the facts processed: a fact's effects and its consumption commit together.
 */
export type FactConsumer = (trx: Knex.Transaction, facts: OutboxFact[]) => Promise<void>;

/** Facts taken per transaction: one commit for many triggers, short enough not to hold locks long. */
export const DISPATCH_BATCH = 200;

/** Told of a fact that could not be consumed and was set aside with its error. */
export type FactSetAside = (fact: OutboxFact, error: unknown) => void;

/**
 * The outbox consumer (docs/flows.md, The engine): takes pending facts oldest first and hands them to every
 * consumer, exactly once per fact. It holds no rules. A batch that fails is retried fact by fact, so one fact
 * that cannot be consumed is set aside with its error instead of blocking every fact behind it.
 */
export function createTriggerDispatcher(deps: {
  db: Database;
  outbox: TriggerOutbox;
  consumers: FactConsumer[];
  clock?: Clock;
  onFailure?: FactSetAside | undefined;
}) {
  const { db, outbox, consumers } = deps;
  const clock = deps.clock ?? systemClock;

  const consume = async (trx: Knex.Transaction, facts: OutboxFact[]) => {
    for (const consumer of consumers) await consumer(trx, facts);
    await outbox.markProcessed(trx, facts.map((f) => f.id), clock());
  };

  /** One batch: how many facts it consumed (0: the outbox is empty, or other processes hold the rest). */
  async function drainOnce(limit = DISPATCH_BATCH): Promise<number> {
    if (!(await outbox.hasPending(db.knex))) return 0;
    try {
      return await db.writeTransaction(async (trx) => {
        const facts = await outbox.claim(trx, limit);
        if (facts.length > 0) await consume(trx, facts);
        return facts.length;
      });
    } catch (error) {
      if (limit === 1) throw error;
      // Find the fact that fails: the others go through one at a time.
      let done = 0;
      for (;;) {
        const taken = await db.writeTransaction(async (trx) => {
          const [fact] = await outbox.claim(trx, 1);
          if (!fact) return 0;
          try {
            await trx.transaction((inner) => consume(inner, [fact]));
          } catch (failure) {
            deps.onFailure?.(fact, failure);
            await outbox.markProcessed(trx, [fact.id], clock(), failure instanceof Error ? failure.message : String(failure));
          }
          return 1;
        });
        done += taken;
        if (taken === 0 || done >= limit) return done;
      }
    }
  }

  return {
    drainOnce,
    /** Every pending fact (what `emk worker --once` and tests run); returns how many were consumed. */
    async drain(): Promise<number> {
      let total = 0;
      for (let n = await drainOnce(); n > 0; n = await drainOnce()) total += n;
      return total;
    },
  };
}

export type TriggerDispatcher = ReturnType<typeof createTriggerDispatcher>;
