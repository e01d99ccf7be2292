import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { createServices } from '../src/domain/create-services.js';
import { openDatabase } from '../src/domain/db/database.js';
import { uuidv7 } from '../src/domain/shared/ids.js';

/**
 * Contacts for the batch and import rows to name (the batch endpoints never create contacts), subscribed, with
 * `propertiesOf(i)` as the i-th contact's properties.
 */
export async function seedContacts(
  databaseUrl: string,
  workspaceId: string,
  count: number,
  propertiesOf: (i: number) => Record<string, unknown> = () => ({}),
): Promise<string[]> {
  const services = createServices(openDatabase(databaseUrl));
  try {
    const emails = Array.from({ length: count }, (_, i) => `volume-${i}@bench.test`);
    for (let i = 0; i < emails.length; i += 1000) {
      await services.db.writeTransaction((trx) =>
        services.contacts.writeContacts(
          trx,
          emails.slice(i, i + 1000).map((email, j) => ({
            workspaceId,
            email,
            properties: propertiesOf(i + j),
            merge: 'overwrite' as const,
            statusOnCreate: 'subscribed' as const,
            sourceOnCreate: 'bench',
          })),
        ),
      );
    }
    return emails;
  } finally {
    await services.close();
  }
}

const PRODUCTS = 500;

/** One batch-event row: a product view with a dedupe key, spread over the last 90 days. */
export function eventRow(emails: string[], i: number) {
  return {
    email: emails[i % emails.length]!,
    event_name: i % 5 === 0 ? 'added_to_cart' : 'viewed_product',
    source: 'bench',
    timestamp: new Date(Date.now() - (i % 90) * 86_400_000 - (i % 86_400) * 1000).toISOString(),
    properties: { product_id: `sku-${i % PRODUCTS}`, price: 10 + (i % 40), dedupe_key: `bench-${i}` },
  };
}

/** `rows` JSON Lines event rows for `emk events import`. */
export async function writeEventsFile(path: string, rows: number, emails: string[]): Promise<void> {
  const out = createWriteStream(path);
  for (let i = 0; i < rows; i++) {
    if (!out.write(`${JSON.stringify(eventRow(emails, i))}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/**
 * The machine's ceiling for the same table: plain knex multi-row inserts of the import's own rows, ready-made
 * (each email's contact id looked up beforehand), 1000 a statement, one transaction per 10 statements, no
 * lookups and no triggers. What `emk events import` is compared with: run it on a snapshot of the database
 * taken just before the import ([snapshot.ts](./snapshot.ts)), so both write the same rows into the same
 * file, and drop the snapshot afterwards.
 */
export async function measureInsertCeiling(databaseUrl: string, workspaceId: string, emails: string[], rows: number): Promise<number> {
  const db = openDatabase(databaseUrl);
  try {
    const contacts = await db.knex('contacts').where({ workspace_id: workspaceId }).select('id', 'email');
    const idOf = new Map(contacts.map((c) => [c.email as string, c.id as string]));
    const now = Date.now();
    const make = (i: number) => {
      const row = eventRow(emails, i);
      return {
        id: uuidv7(now),
        workspace_id: workspaceId,
        contact_id: idOf.get(row.email)!,
        anonymous_id: null,
        event_name: row.event_name,
        properties: JSON.stringify(row.properties),
        source: row.source,
        dedupe_key: row.properties.dedupe_key,
        created_at: Date.parse(row.timestamp),
        received_at: now,
      };
    };
    // The import started just after the snapshot's closing checkpoint; the ceiling starts after one too.
    if (db.dialect.name === 'postgres') await db.knex.raw('CHECKPOINT');
    const started = performance.now();
    for (let i = 0; i < rows; i += 10_000) {
      await db.knex.transaction(async (trx) => {
        for (let j = i; j < Math.min(rows, i + 10_000); j += 1000) {
          await trx('events').insert(Array.from({ length: Math.min(1000, rows - j) }, (_, k) => make(j + k)));
        }
      });
    }
    return rows / ((performance.now() - started) / 1000);
  } finally {
    await db.close();
  }
}

/** p50 and p99 of `POST /api/v1/events/batch` with 1000 events each, one request at a time. */
export async function measureBatchLatency(baseUrl: string, apiKey: string, emails: string[], requests: number) {
  const latencies: number[] = [];
  for (let r = 0; r < requests + 3; r++) {
    const events = Array.from({ length: 1000 }, (_, i) => eventRow(emails, r * 1000 + i));
    const started = performance.now();
    const response = await fetch(`${baseUrl}/api/v1/events/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      body: JSON.stringify({ events }),
    });
    const body = (await response.json()) as { processed?: number };
    if (response.status !== 200 || body.processed !== 1000) {
      throw new Error(`events/batch answered ${response.status} ${JSON.stringify(body).slice(0, 300)}`);
    }
    // The first requests warm up.
    if (r >= 3) latencies.push(performance.now() - started);
  }
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return { p50: at(0.5), p99: at(0.99) };
}
