import { expect, it } from 'vitest';
import { openDatabase } from '../src/domain/db/database.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

/**
 * Event owners remembered between group commits (contacts/known-contacts.ts): a remembered owner costs no
 * lookup, and is never trusted: erased or changed since, by this process or another, the write looks again.
 */
describeEachDatabase('remembered event owners', (h) => {
  let counter = 0;
  const uniqueEmail = () => `known-${process.pid}-${++counter}@example.com`;
  const collect = (ws: TestWorkspace, email: string, name = 'viewed_product') =>
    h().request({ method: 'POST', url: '/collect/event', json: { site_id: ws.siteId, event_name: name, email } });
  const track = (ws: TestWorkspace, contactId: string) =>
    h().request({ method: 'POST', url: '/api/v1/events', key: ws.apiKey, json: { contact_id: contactId, event_name: 'loyalty' } });
  const knex = () => h().services.db.knex;
  const contactsOf = (ws: TestWorkspace, email: string) =>
    knex()('contacts').where({ workspace_id: ws.id, email_key: email.toLowerCase() }).orderBy('created_at').select('id', 'erased_at');
  const ownersOf = async (ws: TestWorkspace, name: string) =>
    (await knex()('events').where({ workspace_id: ws.id, event_name: name }).orderBy('id').select('contact_id')).map((e) => e.contact_id as string);
  /** Runs `fn`, returning the contact reads knex sent meanwhile (held writes are not sent through knex). */
  const contactReads = async (fn: () => Promise<void>) => {
    const reads: string[] = [];
    const onQuery = (query: { sql: string }) => void (/^select .* from [`"]contacts[`"]/i.test(query.sql) && reads.push(query.sql));
    knex().on('query', onQuery);
    try {
      await fn();
    } finally {
      knex().removeListener('query', onQuery);
    }
    return reads;
  };
  /** Another process's connection to the same database (SQLite: another connection, not this pool's). */
  const elsewhere = async (work: (other: ReturnType<typeof openDatabase>['knex']) => Promise<unknown>) => {
    const other = openDatabase(h().database.url);
    try {
      await work(other.knex);
    } finally {
      await other.close();
    }
  };

  it('an owner seen before is not looked up again, by email (collect) or by id (POST /api/v1/events)', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail();
    expect((await collect(ws, email)).statusCode).toBe(200);
    const [contact] = await contactsOf(ws, email);
    expect(await contactReads(async () => expect((await collect(ws, email)).statusCode).toBe(200))).toEqual([]);
    expect(await contactReads(async () => expect((await track(ws, contact!.id)).statusCode).toBe(201))).toEqual([]);
    expect(await ownersOf(ws, 'viewed_product')).toEqual([contact!.id, contact!.id]);
    expect(await ownersOf(ws, 'loyalty')).toEqual([contact!.id]);
  });

  it('an owner erased by this process is not used: the next event by its email creates a new contact', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail();
    expect((await collect(ws, email)).statusCode).toBe(200);
    const [first] = await contactsOf(ws, email);
    expect((await h().request({ method: 'DELETE', url: `/api/v1/contacts/${first!.id}`, key: ws.apiKey })).statusCode).toBe(204);
    expect((await collect(ws, email, 'after_erasure')).statusCode).toBe(200);
    const contacts = await contactsOf(ws, email);
    expect(contacts.map((c) => c.erased_at === null)).toEqual([true]);
    expect(contacts[0]!.id).not.toBe(first!.id);
    expect(await ownersOf(ws, 'after_erasure')).toEqual([contacts[0]!.id]);
    expect((await track(ws, first!.id)).statusCode).toBe(404);
  });

  it('an owner erased or given another email by another process is not used either', async () => {
    const ws = await h().workspace();
    const [erasedEmail, movedEmail] = [uniqueEmail(), uniqueEmail()];
    expect((await collect(ws, erasedEmail)).statusCode).toBe(200);
    expect((await collect(ws, movedEmail)).statusCode).toBe(200);
    const [erased] = await contactsOf(ws, erasedEmail);
    const [moved] = await contactsOf(ws, movedEmail);
    // Both are remembered now; another process erases one and gives the other a new address.
    await elsewhere(async (other) => {
      await other('contacts').where({ id: erased!.id }).update({ erased_at: Date.now() });
      await other('contacts').where({ id: moved!.id }).update({ email: `moved-${movedEmail}`, email_key: `moved-${movedEmail}` });
    });
    expect((await track(ws, erased!.id)).statusCode).toBe(404);
    expect((await collect(ws, movedEmail, 'old_address')).statusCode).toBe(200);
    const [fresh] = await contactsOf(ws, movedEmail);
    expect(fresh!.id).not.toBe(moved!.id);
    expect(await ownersOf(ws, 'old_address')).toEqual([fresh!.id]);
    // The moved contact is still itself by id.
    expect((await track(ws, moved!.id)).statusCode).toBe(201);
    expect(await knex()('events').where({ contact_id: erased!.id, event_name: 'loyalty' })).toHaveLength(0);
  });
});
