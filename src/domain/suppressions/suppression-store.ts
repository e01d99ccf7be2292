import type { Db } from '../db/database.js';
import { emailKey } from '../shared/keys.js';
import { chunk, chunkSizeFor } from '../db/bulk.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { selectPage } from '../db/page.js';
import type { Paging } from '../shared/paging.js';
import { toIso } from '../shared/time.js';
import type { Suppression } from './suppression.schema.js';

export function createSuppressionStore(dialect: Dialect) {
  return {
    /** Adds addresses; one already suppressed keeps its first reason. Returns how many were new. */
    async add(db: Db, workspaceId: string, emails: string[], reason: string, now: number): Promise<number> {
      const unique = new Map(emails.map((email) => [emailKey(email), email]));
      let added = 0;
      for (const part of chunk([...unique], chunkSizeFor(dialect, 5))) {
        const rows = await db('suppressions')
          .insert(part.map(([key, email]) => ({ workspace_id: workspaceId, email_key: key, email, reason, created_at: now })))
          .onConflict(['workspace_id', 'email_key'])
          .ignore()
          .returning('email_key');
        added += (rows as unknown[]).length;
      }
      return added;
    },

    async remove(db: Db, workspaceId: string, email: string): Promise<boolean> {
      return (await db('suppressions').where({ workspace_id: workspaceId, email_key: emailKey(email) }).delete()) > 0;
    },

    /** Removes the address's suppression if it has this reason and was made at or before `madeBy`. */
    async removeIf(db: Db, workspaceId: string, email: string, reason: string, madeBy: number): Promise<boolean> {
      const rows = db('suppressions').where({ workspace_id: workspaceId, email_key: emailKey(email), reason }).where('created_at', '<=', madeBy);
      return (await rows.delete()) > 0;
    },

    /** Which of these addresses are suppressed, by email key. */
    async suppressedKeys(db: Db, workspaceId: string, emails: string[]): Promise<Set<string>> {
      const found = new Set<string>();
      for (const part of chunk([...new Set(emails.map(emailKey))], chunkSizeFor(dialect, 1))) {
        const rows = await db('suppressions').where({ workspace_id: workspaceId }).whereIn('email_key', part).select('email_key');
        for (const row of rows) found.add(row.email_key as string);
      }
      return found;
    },

    list: (db: Db, workspaceId: string, paging: Paging) =>
      selectPage(
        db('suppressions').where({ workspace_id: workspaceId }),
        [
          { column: 'created_at', order: 'desc' },
          { column: 'email_key', order: 'asc' },
        ],
        paging,
        (row): Suppression => ({ email: row.email as string, reason: row.reason as string, created_at: toIso(row.created_at as number)! }),
      ),
  };
}

export type SuppressionStore = ReturnType<typeof createSuppressionStore>;
