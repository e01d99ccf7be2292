import type { Knex } from 'knex';

/** Tests of query plans: tables filled directly, large enough that a planner prefers an index to a scan. */

/** `count` plain subscribed contacts `c-0000`, `c-0001`, … of the workspace; returns their ids. */
export async function insertContacts(knex: Knex, workspaceId: string, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `c-${String(i).padStart(4, '0')}`);
  await knex.batchInsert(
    'contacts',
    ids.map((id, i) => ({
      id,
      workspace_id: workspaceId,
      email: `p${i}@example.com`,
      email_key: `p${i}@example.com`,
      properties: '{}',
      subscription_status: 'subscribed',
      created_at: 1,
      updated_at: 1,
    })),
    200,
  );
  return ids;
}

/**
 * The plan of one statement as the driver received it (PostgreSQL: `$n` placeholders; SQLite: `?`). A partition's
 * copy of an index (PostgreSQL names it after the partition) is written as the partitioned table's index it copies.
 */
export async function explainPlan(knex: Knex, dialect: 'sqlite' | 'postgres', sql: string, bindings: unknown[]): Promise<string> {
  if (dialect === 'sqlite') {
    const rows = (await knex.raw(`EXPLAIN QUERY PLAN ${sql}`, bindings as never[])) as Array<{ detail: string }>;
    return rows.map((r) => r.detail).join('\n');
  }
  const connection = (await knex.client.acquireConnection()) as { query(text: string, values: unknown[]): Promise<{ rows: Array<Record<string, string>> }> };
  try {
    const { rows } = await connection.query(`EXPLAIN ${sql}`, bindings);
    const copies = await connection.query(
      `SELECT c.relname AS copy, p.relname AS original FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
        WHERE c.relkind = 'i' AND p.relkind = 'I' ORDER BY length(c.relname) DESC`,
      [],
    );
    let plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    for (const { copy, original } of copies.rows) plan = plan.replaceAll(` ${copy} `, ` ${original} `);
    return plan;
  } finally {
    await knex.client.releaseConnection(connection);
  }
}
