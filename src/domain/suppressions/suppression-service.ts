import type { Knex } from 'knex';
import type { Dialect } from '../db/dialect/dialect.js';
import type { Database, Db, Reader } from '../db/database.js';
import { NotFoundError } from '../errors.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import { systemClock, type Clock } from '../shared/time.js';
import { parseInput } from '../shared/validate.js';
import { MANUAL, suppressionEmailParams, suppressSchema, type Suppression } from './suppression.schema.js';
import { createSuppressionStore } from './suppression-store.js';

/** Addresses that receive no email of any kind, marketing or transactional (docs/email.md, Consent). */
export function createSuppressionService(deps: {
  reader: Reader;
  writeTransaction: Database['writeTransaction'];
  dialect: Dialect;
  clock?: Clock;
}) {
  const { reader, writeTransaction } = deps;
  const store = createSuppressionStore(deps.dialect);
  const clock = deps.clock ?? systemClock;
  return {
    async suppress(workspaceId: string, body: unknown): Promise<{ suppressed: number }> {
      const input = parseInput(suppressSchema, body);
      const suppressed = await writeTransaction((trx) => store.add(trx, workspaceId, input.emails, input.reason ?? MANUAL, clock()));
      return { suppressed };
    },

    /** Adds addresses inside the caller's transaction (a relay's permanent rejection, an import's chunk). */
    add: (db: Db, workspaceId: string, emails: string[], reason: string, now = clock()) => store.add(db, workspaceId, emails, reason, now),

    /**
     * Lifts the address's suppression inside the caller's transaction, only if it is of this reason and made at
     * or before `madeBy` (a relay's reactivation lifts the bounce it knew of, never a complaint or a newer bounce).
     */
    liftIf: (db: Db, workspaceId: string, email: string, reason: string, madeBy: number) => store.removeIf(db, workspaceId, email, reason, madeBy),

    async lift(workspaceId: string, email: unknown): Promise<void> {
      const { email: address } = parseInput(suppressionEmailParams, { email });
      if (!(await writeTransaction((trx) => store.remove(trx, workspaceId, address)))) throw new NotFoundError();
    },

    async list(workspaceId: string, paging: Paging): Promise<Page<Suppression>> {
      const { rows, total } = await store.list(reader(), workspaceId, paging);
      return toPage(rows, total, paging);
    },

    suppressedKeys: (db: Knex | Knex.Transaction, workspaceId: string, emails: string[]) => store.suppressedKeys(db, workspaceId, emails),
  };
}

export type SuppressionService = ReturnType<typeof createSuppressionService>;
