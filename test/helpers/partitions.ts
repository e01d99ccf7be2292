import type { Knex } from 'knex';
import { monthPartition, type MonthPartition } from '../../src/domain/db/dialect/postgres-partitions.js';

/** The month `offset` months from the one `at` falls in (UTC), as the partitions name and bound it. */
export const monthFrom = (at: number, offset: number): MonthPartition => {
  const date = new Date(at);
  return monthPartition('events', date.getUTCFullYear(), date.getUTCMonth() + offset);
};

export const rowsOf = <T>(result: unknown): T[] => (result as { rows: T[] }).rows;

/** The partitions attached to `events` (pg_inherits). */
export async function attachedTo(db: Knex): Promise<string[]> {
  return rowsOf<{ name: string }>(
    await db.raw(`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass ORDER BY 1`),
  ).map((row) => row.name);
}

