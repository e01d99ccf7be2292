import type { Database } from '../db/database.js';
import { createTableGrowth } from '../db/table-growth.js';
import { WriteBatcher } from '../db/write-batcher.js';
import { createJobQueue } from '../jobs/job-queue.js';
import { createTriggerOutbox } from '../triggers/trigger-outbox.js';

/**
 * What every area writes through: the database (and its reader for lag-tolerant reads), the group-commit writer,
 * the planner statistics kept in step, the job queue and the trigger outbox. Each area module takes this as its
 * first argument.
 */
export function createRuntime(db: Database) {
  const { knex, dialect, writeTransaction } = db;
  const writer = new WriteBatcher(db, { concurrency: dialect.writeConcurrency });
  const tableGrowth = createTableGrowth(knex, dialect);
  const jobs = createJobQueue({ db });
  // A committed fact wakes this process's worker at once (other processes' find it by their poll) and counts
  // toward the outbox's statistics.
  const outbox = createTriggerOutbox(dialect, {
    onCommit: (facts) => {
      jobs.wake('facts');
      tableGrowth.added('trigger_outbox', facts);
    },
  });
  // Reads that tolerate a little lag take `reader` (the replica when healthy); everything else uses `knex`.
  return { db, knex, reader: db.reader, dialect, writeTransaction, writer, tableGrowth, jobs, outbox };
}

export type Runtime = ReturnType<typeof createRuntime>;
