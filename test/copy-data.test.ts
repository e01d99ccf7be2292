import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServices, emailOptionsOf, type Services } from '../src/domain/create-services.js';
import { copyData } from '../src/domain/data-copy/data-copy.js';
import { TableChecksum } from '../src/domain/data-copy/row-codec.js';
import { openDatabase } from '../src/domain/db/database.js';
import { buildApp } from '../src/server/app.js';
import { runEmk } from './helpers/cli.js';
import { closeHarness, createHarness, manualClock, type Harness, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

/** Rows per table of a database, as counted there. */
async function rowCounts(url: string, tables: string[]): Promise<Record<string, number>> {
  const db = openDatabase(url);
  try {
    const counts: Record<string, number> = {};
    for (const table of tables) counts[table] = Number((await db.knex(table).count({ n: '*' }))[0]!.n);
    return counts;
  } finally {
    await db.close();
  }
}

const path = (url: string) => new URL(url).pathname;

describe('table checksums', () => {
  it('do not depend on the order rows come in, and change with any value (equal rows do not cancel out)', () => {
    const rows = [{ id: 'a', n: 1, doc: { y: 1, x: [1, 2] } }, { id: 'b', n: 2, doc: null }];
    const sum = (list: object[]) => {
      const checksum = new TableChecksum(['id', 'n', 'doc']);
      for (const row of list) checksum.add(row as Record<string, unknown>);
      return checksum.hex;
    };
    expect(sum(rows)).toBe(sum([...rows].reverse()));
    expect(sum([{ id: 'a', n: 1, doc: { x: [1, 2], y: 1 } }, rows[1]!])).toBe(sum(rows));
    expect(sum([{ ...rows[0]!, n: 3 }, rows[1]!])).not.toBe(sum(rows));
    expect(sum([rows[0]!, rows[0]!])).not.toBe(sum([]));
  });
});

for (const targetDialect of DIALECTS) {
  describe(`emk copy-data: SQLite → ${targetDialect}`, () => {
    let source: Harness;
    let ws: TestWorkspace;
    const targets: TestDatabase[] = [];
    const seeded = { contactId: '', clickLink: '', preferencesLink: '', identityToken: '', email: '' };

    const newTarget = async () => {
      const target = await createTestDatabase(targetDialect);
      targets.push(target);
      return target;
    };

    beforeAll(async () => {
      source = await createHarness('sqlite');
      ws = await source.workspace();
      const helpers = sendingHelpers(() => source);
      for (const tier of ['gold', 'silver', 'bronze']) {
        const id = await helpers.contact(ws, 'subscribed', { first_name: 'Ann', tier, tags: ['a', 'b'] });
        const event = await helpers.api(ws, 'POST', '/events', { contact_id: id, event_name: 'Viewed Product', properties: { tier, nested: { a: [1, 2] } } });
        expect(event.statusCode).toBe(201);
        const order = await helpers.api(ws, 'POST', '/ecommerce/orders', {
          contact_id: id,
          platform: 'pos',
          order_number: `A-${tier}`,
          total_amount: 20.5,
          currency: 'USD',
          status: 'paid',
          ordered_at: '2026-05-01T10:00:00Z',
          items: [{ external_id: 'p1', title: 'Pen', quantity: 3, price: 5.25 }],
        });
        expect(order.statusCode).toBe(201);
      }
      const sent = await helpers.sentMessage(ws, '<a href="https://shop.test/p/1?ref=mail">Product</a><a href="{{ preferences_url }}">p</a>');
      const [click, preferences] = [...sent.message.html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'));
      Object.assign(seeded, {
        contactId: sent.contactId,
        email: sent.email,
        clickLink: path(click!),
        preferencesLink: path(preferences!),
        identityToken: await source.services.identityTokens.mint(ws.id, { contactId: sent.contactId }),
      });
    });

    afterAll(async () => {
      if (source) await closeHarness(source);
      for (const target of targets) await target.drop();
    });

    /** Services and an app on the target, as `emk serve` would build them there. */
    async function serveTarget(url: string): Promise<{ services: Services; app: FastifyInstance; close(): Promise<void> }> {
      const services = createServices(openDatabase(url), { clock: manualClock(), email: emailOptionsOf(source.config) });
      const app = await buildApp({ services, config: source.config, logLevel: 'silent' });
      return {
        services,
        app,
        async close() {
          await app.close();
          await services.close();
        },
      };
    }

    it('copies every table and verifies it; tracking and consent links, identity tokens and API keys issued before work on the target', async () => {
      const target = await newTarget();
      const result = await copyData(source.database.url, target.url);
      expect(result.verified).toBe(true);
      const tables = Object.keys(result.tables);
      for (const table of ['workspaces', 'server_secrets', 'api_keys', 'integrations', 'contacts', 'events', 'orders', 'order_items', 'messages', 'campaigns', 'jobs', 'trigger_outbox', 'engagements']) {
        expect(tables).toContain(table);
      }
      expect(tables.some((table) => table.startsWith('knex_'))).toBe(false);
      const sourceCounts = await rowCounts(source.database.url, tables);
      expect(result.tables).toEqual(sourceCounts);
      expect(await rowCounts(target.url, tables)).toEqual(sourceCounts);
      expect(result.rows).toBe(Object.values(sourceCounts).reduce((a, b) => a + b, 0));
      for (const table of ['workspaces', 'api_keys', 'contacts', 'events', 'orders', 'order_items', 'messages', 'trigger_outbox']) {
        expect(result.tables[table], table).toBeGreaterThan(0);
      }

      if (targetDialect === 'postgres') {
        // And back: PostgreSQL's reads (bigint and numeric as text, jsonb parsed) checksum as SQLite's do.
        const back = await createTestDatabase('sqlite');
        targets.push(back);
        const returned = await copyData(target.url, back.url);
        expect(returned).toEqual(result);
      }

      const served = await serveTarget(target.url);
      try {
        const click = await served.app.inject({ method: 'GET', url: seeded.clickLink });
        expect(click.statusCode).toBe(302);
        expect(click.headers.location).toMatch(/^https:\/\/shop\.test\/p\/1\?ref=mail&_ir_id=/);
        const tampered = seeded.clickLink.slice(0, -3) + (seeded.clickLink.endsWith('AAA') ? 'BBB' : 'AAA');
        expect((await served.app.inject({ method: 'GET', url: tampered })).statusCode).toBe(404);
        const preferences = await served.app.inject({ method: 'GET', url: seeded.preferencesLink });
        expect(preferences.statusCode).toBe(200);
        expect(preferences.body).toContain('value="subscribed" checked');
        expect(await served.services.identityTokens.resolve(ws.id, seeded.identityToken)).toMatchObject({ contactId: seeded.contactId });
        const contacts = await served.app.inject({ method: 'GET', url: '/api/v1/contacts', headers: { 'x-api-key': ws.apiKey } });
        expect(contacts.statusCode).toBe(200);
        expect(contacts.json().meta.total).toBe(sourceCounts.contacts);
        // New rows draw ids past the copied ones (the outbox's sequence on PostgreSQL).
        const event = await served.app.inject({
          method: 'POST',
          url: '/api/v1/events',
          headers: { 'x-api-key': ws.apiKey, 'content-type': 'application/json' },
          payload: JSON.stringify({ contact_id: seeded.contactId, event_name: 'After the move' }),
        });
        expect(event.statusCode).toBe(201);
      } finally {
        await served.close();
      }
    });

    it.runIf(targetDialect === 'sqlite')('SQLite to SQLite, every row reads back exactly as stored, NULL JSON documents included', async () => {
      const target = await newTarget();
      const { tables } = await copyData(source.database.url, target.url);
      const rowsOf = async (url: string) => {
        const db = openDatabase(url);
        try {
          const all: Record<string, unknown[]> = {};
          // In one order on both sides (the copy inserts in key order, the source in the order rows came).
          for (const table of Object.keys(tables)) {
            const rows = await db.knex(table).select('*');
            all[table] = rows.map((row) => JSON.stringify(row)).sort();
          }
          return all;
        } finally {
          await db.close();
        }
      };
      const copied = await rowsOf(target.url);
      expect(copied).toEqual(await rowsOf(source.database.url));
      expect(copied.workspaces!.some((row) => JSON.parse(row as string).own_domains === null)).toBe(true);
    });

    it('a target that holds data is refused and left as it was', async () => {
      const target = await newTarget();
      await copyData(source.database.url, target.url);
      const before = await rowCounts(target.url, ['contacts', 'events']);
      await expect(copyData(source.database.url, target.url)).rejects.toThrow('target database is not empty');
      expect(await rowCounts(target.url, ['contacts', 'events'])).toEqual(before);
    });

    it('an interrupted copy leaves the target migrated and empty; running it again ends verified', async () => {
      const target = await newTarget();
      let pages = 0;
      const interrupted = copyData(source.database.url, target.url, {
        pageRows: 2,
        onProgress: () => {
          if (++pages === 5) throw new Error('interrupted');
        },
      });
      await expect(interrupted).rejects.toThrow('interrupted');
      expect(pages).toBe(5);
      const tables = ['workspaces', 'server_secrets', 'contacts', 'events', 'orders', 'messages'];
      expect(Object.values(await rowCounts(target.url, tables))).toEqual(tables.map(() => 0));
      const again = await copyData(source.database.url, target.url, { pageRows: 2 });
      expect(again.verified).toBe(true);
      expect(again.tables).toEqual(await rowCounts(source.database.url, Object.keys(again.tables)));
    });

    it.runIf(targetDialect === 'sqlite')('a table that does not read back as written fails verification, and nothing is kept', async () => {
      const target = await newTarget();
      const db = openDatabase(target.url);
      try {
        // Something past emk changes rows as they land: the copy must notice, not report success.
        await db.knex.raw("CREATE TRIGGER garble AFTER INSERT ON contacts BEGIN UPDATE contacts SET source = 'garbled' WHERE id = NEW.id; END");
      } finally {
        await db.close();
      }
      await expect(copyData(source.database.url, target.url)).rejects.toThrow(/verification failed for table contacts: .* nothing was kept/);
      expect(await rowCounts(target.url, ['workspaces', 'contacts', 'events'])).toEqual({ workspaces: 0, contacts: 0, events: 0 });
    });

    it('a source written to during the copy is refused, and nothing is kept', async () => {
      const target = await newTarget();
      let written = false;
      const copy = copyData(source.database.url, target.url, {
        onProgress: async ({ table }) => {
          // emk serve left running: a contact changes after its table was copied.
          if (table !== 'contacts' || written) return;
          written = true;
          await source.services.db.knex('contacts').where({ id: seeded.contactId }).update({ source: 'changed meanwhile' });
        },
      });
      await expect(copy).rejects.toThrow(/the source changed while it was copied \(table contacts\)/);
      expect(written).toBe(true);
      expect(await rowCounts(target.url, ['workspaces', 'contacts'])).toEqual({ workspaces: 0, contacts: 0 });
    });

    it('emk copy-data --json prints tables, rows and verified; a second run exits 1: target database is not empty', async () => {
      const target = await newTarget();
      const first = await runEmk(['copy-data', '--from', source.database.url, '--to', target.url, '--json']);
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      const printed = JSON.parse(first.stdout);
      expect(Object.keys(printed).sort()).toEqual(['rows', 'tables', 'verified']);
      expect(printed.verified).toBe(true);
      expect(printed.tables.contacts).toBe((await rowCounts(source.database.url, ['contacts'])).contacts);
      const second = await runEmk(['copy-data', '--from', source.database.url, '--to', target.url, '--json']);
      expect(second.code).toBe(1);
      expect(second.stdout).toBe('');
      expect(second.stderr).toContain('target database is not empty');
    });
  });
}
