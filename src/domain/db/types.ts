import type { Knex } from 'knex';

/*
 * Types shared by database.ts and the files below it (the dialects, held writes): kept here, importing nothing of
 * ours, so those files need not import database.ts, which imports them.
 */

/** What stores and services read and write through: the pool, or the caller's transaction. */
export type Db = Knex | Knex.Transaction;

/** Calls to the driver and the statements they carried, counted per database since it opened (the bench prints them). */
export interface WriteStats {
  driverCalls: number;
  statements: number;
}

/**
 * Where a read that tolerates a little lag goes (Database.reader): the read replica's pool while it is healthy,
 * else the primary's. Never for a read inside a write.
 */
export type Reader = () => Knex;
