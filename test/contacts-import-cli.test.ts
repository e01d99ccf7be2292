import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, inject, it } from 'vitest';
import { runEmk } from './helpers/cli.js';
import { describeEachDatabase } from './helpers/harness.js';

const FIXTURES = join(import.meta.dirname, '../fixtures');

describeEachDatabase('emk contacts import', (h, dialect) => {
  let workspaceId = '';
  const file = (name: string, text: string) => {
    const path = join(inject('tmpDir'), `${dialect}-${name}`);
    writeFileSync(path, text);
    return path;
  };
  const emk = (args: string[]) => runEmk([...args, '--db', h().database.url, '--workspace', workspaceId]);
  const json = async (args: string[]) => {
    const result = await emk([...args, '--json']);
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout);
  };
  const contactOf = async (email: string) => {
    const { data } = await h().services.contacts.list(workspaceId, { email }, { page: 1, perPage: 1 });
    return data[0]!;
  };
  const consentOf = async (email: string) => (await h().services.contacts.consentHistory(workspaceId, (await contactOf(email)).id)).data;
  const suppressed = async () =>
    (await h().services.suppressions.list(workspaceId, { page: 1, perPage: 500 })).data.map((s) => [s.email, s.reason]);
  const contactCount = async () => (await h().services.contacts.list(workspaceId, {}, { page: 1, perPage: 1 })).meta.total;

  it('imports the sample: status and a consent history entry (origin import, at consented_at), properties.<key> columns, suppressed', async () => {
    workspaceId = (await h().workspace('Contacts import')).id;
    // --dry-run says what would be written and writes nothing.
    expect(await json(['contacts', 'import', '--file', join(FIXTURES, 'contacts.csv'), '--dry-run'])).toEqual({ created: 4, updated: 0, errors: [] });
    expect(await contactCount()).toBe(0);
    expect(await suppressed()).toEqual([]);

    expect(await json(['contacts', 'import', '--file', join(FIXTURES, 'contacts.csv')])).toEqual({ created: 4, updated: 0, errors: [] });
    const ann = await contactOf('ann@example.com');
    expect(ann).toMatchObject({
      subscription_status: 'subscribed',
      source: 'import',
      properties: { first_name: 'Ann', last_name: 'Archer', phone: '+44 20 7946 0001', city: 'London', plan: 'gold' },
    });
    expect(await consentOf('ann@example.com')).toEqual([{ status: 'subscribed', previous_status: null, origin: 'import', at: '2025-03-14T09:30:00.000Z' }]);
    expect((await contactOf('bob@example.com')).subscription_status).toBe('unsubscribed');
    // No status column: non_subscribed; no consented_at: the time of the import.
    expect((await contactOf('cleo@example.com')).subscription_status).toBe('non_subscribed');
    const [cleo] = await consentOf('cleo@example.com');
    expect(cleo).toMatchObject({ status: 'non_subscribed', origin: 'import' });
    expect(Date.now() - Date.parse(cleo!.at)).toBeLessThan(60_000);
    expect(await suppressed()).toEqual([['dan@example.com', 'import']]);

    // Re-running changes nothing.
    const before = await h().services.contacts.list(workspaceId, {}, { page: 1, perPage: 10 });
    expect(await json(['contacts', 'import', '--file', join(FIXTURES, 'contacts.csv')])).toEqual({ created: 0, updated: 0, errors: [] });
    expect(await h().services.contacts.list(workspaceId, {}, { page: 1, perPage: 10 })).toEqual(before);
    expect(await consentOf('ann@example.com')).toHaveLength(1);
    expect(await suppressed()).toHaveLength(1);
  });

  it('JSON Lines: an existing contact has its properties merged and keeps its status; row errors name line and field', async () => {
    const jsonl = file(
      'contacts.jsonl',
      [
        JSON.stringify({ email: 'Ann@Example.com', subscription_status: 'unsubscribed', properties: { plan: 'platinum', pets: 2 } }),
        JSON.stringify({ email: 'eve@example.com', first_name: 'Eve', subscription_status: 'subscribed', suppressed: true }),
        JSON.stringify({ email: 'not-an-address', first_name: 'X' }),
        '{"email": "broken@example.com",',
        JSON.stringify({ email: 'fay@example.com', subscription_status: 'maybe' }),
        JSON.stringify({ email: 'gus@example.com', consented_at: 'last tuesday' }),
        JSON.stringify({ email: 'hal@example.com', properties: ['not', 'an', 'object'] }),
      ].join('\n'),
    );
    const result = await json(['contacts', 'import', '--file', jsonl]);
    expect(result).toEqual({
      created: 1,
      updated: 1,
      errors: [
        { line: 3, email: 'not-an-address', error: 'invalid request: email must be an email address' },
        { line: 4, email: null, error: 'line is not valid JSON' },
        { line: 5, email: 'fay@example.com', error: 'invalid request: subscription_status must be one of subscribed, unsubscribed, non_subscribed' },
        { line: 6, email: 'gus@example.com', error: 'invalid request: consented_at must be an RFC 3339 time or YYYY-MM-DD HH:MM:SS' },
        { line: 7, email: 'hal@example.com', error: expect.stringMatching(/^invalid request: properties must be an object/) },
      ],
    });
    const ann = await contactOf('ann@example.com');
    expect(ann.subscription_status).toBe('subscribed');
    expect(ann.properties).toMatchObject({ first_name: 'Ann', city: 'London', plan: 'platinum', pets: 2 });
    expect(await consentOf('ann@example.com')).toHaveLength(1);
    expect((await contactOf('eve@example.com')).subscription_status).toBe('subscribed');
    expect(await suppressed()).toContainEqual(['eve@example.com', 'import']);

    // The human summary lists the refused rows by line; they do not change the exit code.
    const human = await emk(['contacts', 'import', '--file', jsonl]);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('0 contacts created, 0 updated, 5 rows refused');
    expect(human.stdout).toContain('line 5: invalid request: subscription_status must be one of');
  });

  it('a file of several chunks: every row once, an error past the first chunk keeps its line', async () => {
    const before = await contactCount();
    const rows = Array.from({ length: 2500 }, (_, i) =>
      i === 1499 ? 'bad-row,x' : `bulk${i}@example.com,${i % 2 === 0 ? 'subscribed' : ''}`,
    );
    // The same address twice, in different chunks: one contact.
    rows.push('BULK7@example.com,subscribed');
    const csv = file('bulk.csv', `email,subscription_status\n${rows.join('\n')}\n`);
    const result = await json(['contacts', 'import', '--file', csv]);
    expect(result.created).toBe(2499);
    // Row 1500 of the data is line 1501 of the file (the header is line 1).
    expect(result.errors).toEqual([{ line: 1501, email: 'bad-row', error: 'invalid request: email must be an email address' }]);
    expect(await contactCount()).toBe(before + 2499);
    expect((await contactOf('bulk2498@example.com')).subscription_status).toBe('subscribed');
    expect(await json(['contacts', 'import', '--file', csv])).toMatchObject({ created: 0, updated: 0 });
  });

  it('usage: --file is required and must be readable (exit 2)', async () => {
    expect((await emk(['contacts', 'import'])).code).toBe(2);
    const missing = await emk(['contacts', 'import', '--file', join(inject('tmpDir'), 'nope.csv')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^emk: no such file/);
  });
});
