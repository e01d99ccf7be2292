import type { Knex } from 'knex';
import type { Database } from '../db/database.js';
import { NotFoundError } from '../errors.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import { systemClock, type Clock } from '../shared/time.js';
import { parseInput } from '../shared/validate.js';
import { MANUAL, suppressionEmailParams, suppressSchema, type Suppression } from './suppression.schema.js';
import type { SuppressionStore } from './suppression-store.js';

/** Addresses that receive no email of any kind, marketing or transactional (docs/email.md, Consent). */
export function createSuppressionService(deps: {
  knex: Knex;
  writeTransaction: Database['writeTransaction'];
  store: SuppressionStore;
  clock?: Clock;
}) {
  const { knex, writeTransaction, store } = deps;
  const clock = deps.clock ?? systemClock;
  return {
    async suppress(workspaceId: string, body: unknown): Promise<{ suppressed: number }> {
      const input = parseInput(suppressSchema, body);
      const suppressed = await writeTransaction((trx) => store.add(trx, workspaceId, input.emails, input.reason ?? MANUAL, clock()));
      return { suppressed };
    },

    /** A relay's permanent rejection, inside the transaction that marks the message failed. */
    add: (trx: Knex.Transaction, workspaceId: string, emails: string[], reason: string) =>
      store.add(trx, workspaceId, emails, reason, clock()),

    async lift(workspaceId: string, email: unknown): Promise<void> {
      const { email: address } = parseInput(suppressionEmailParams, { email });
      if (!(await writeTransaction((trx) => store.remove(trx, workspaceId, address)))) throw new NotFoundError();
    },

    async list(workspaceId: string, paging: Paging): Promise<Page<Suppression>> {
      const { rows, total } = await store.list(knex, workspaceId, paging);
      return toPage(rows, total, paging);
    },

    suppressedKeys: (db: Knex | Knex.Transaction, workspaceId: string, emails: string[]) => store.suppressedKeys(db, workspaceId, emails),
  };
}

export type SuppressionService = ReturnType<typeof createSuppressionService>;
