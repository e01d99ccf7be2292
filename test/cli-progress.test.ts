import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { plural } from '../src/cli/plural.js';
import { formatBytes, formatDuration, formatProgress } from '../src/cli/progress.js';
import { runEmk, runEmkInTerminal } from './helpers/cli.js';
import { describeEachDatabase } from './helpers/harness.js';

describe('the progress line (formatting)', () => {
  it('rows of a known total: the share, the rate and the time left at that pace', () => {
    expect(formatProgress({ rows: 4000, totalRows: 10_000 }, 2000)).toBe('4,000 of 10,000 rows (40 %), 2,000 rows/s, about 3 s left');
    expect(formatProgress({ rows: 1, totalRows: 1 }, 500)).toBe('1 of 1 row (100 %), 2 rows/s');
    expect(formatProgress({ rows: 0, totalRows: 0 }, 10)).toBe('0 of 0 rows (100 %), 0 rows/s');
  });

  it('a streamed file: rows so far, bytes read of its size (the share and time left come from the bytes)', () => {
    expect(formatProgress({ rows: 1500, bytes: { read: 1024 * 1024, size: 4 * 1024 * 1024 }, note: '3 refused' }, 1000)).toBe(
      '1,500 rows, 1.0 MB of 4.0 MB (25 %), 1,500 rows/s, about 3 s left, 3 refused',
    );
    // Read ahead of the rows it committed: never more than the file.
    expect(formatProgress({ rows: 10, bytes: { read: 900, size: 600 } }, 1000)).toBe('10 rows, 900 B of 600 B (100 %), 10 rows/s');
  });

  it('no rate before time has passed, no time left before anything is done', () => {
    expect(formatProgress({ rows: 0, bytes: { read: 0, size: 2048 } }, 0)).toBe('0 rows, 0 B of 2.0 KB (0 %)');
    expect(formatProgress({ rows: 0, totalRows: 5 }, 1000)).toBe('0 of 5 rows (0 %), 0 rows/s');
  });

  it('sizes and durations for a person', () => {
    expect([0, 1023, 1024, 1536, 5 * 1024 ** 3].map(formatBytes)).toEqual(['0 B', '1023 B', '1.0 KB', '1.5 KB', '5.0 GB']);
    expect([400, 42_000, 185_000, 7_800_000].map(formatDuration)).toEqual(['< 1 s', '42 s', '3 min 5 s', '2 h 10 min']);
  });

  it('plurals: singular for 1 only', () => {
    expect([0, 1, 2].map((n) => plural(n, 'product'))).toEqual(['0 products', '1 product', '2 products']);
    expect(plural(1, 'entry', 'entries')).toBe('1 entry');
    expect(plural(3, 'entry', 'entries')).toBe('3 entries');
  });
});

describeEachDatabase('import exit codes, --max-errors and progress', (h, dialect) => {
  let ws = '';
  const file = (name: string, lines: string[]) => {
    const path = join(inject('tmpDir'), `${dialect}-progress-${name}`);
    writeFileSync(path, `${lines.join('\n')}\n`);
    return path;
  };
  const emk = (args: string[]) => runEmk([...args, '--db', h().database.url, '--workspace', ws]);
  /** A failure: nothing on stdout, one line on stderr. */
  const failure = async (args: string[], code: number, stderr: RegExp) => {
    const result = await emk(args);
    expect([result.code, result.stdout], result.stderr).toEqual([code, '']);
    expect(result.stderr).toMatch(stderr);
  };
  const eventCount = async () => (await h().services.events.list(ws, {}, { page: 1, perPage: 1 })).meta.total;

  it('a file whose every row is refused exits 1 after its summary; one good row is enough for exit 0', async () => {
    ws = (await h().workspace('Progress')).id;
    const bad = file('bad.csv', ['email,first_name', 'not-an-email,Ann', ',Bob']);
    const refused = await emk(['contacts', 'import', '--file', bad]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/^0 contacts created, 0 updated, 2 rows refused\n {2}line 2: /);
    expect(refused.stderr).toBe('emk: all 2 rows were refused\n');

    const mixed = await emk(['contacts', 'import', '--file', file('mixed.csv', ['email', 'ann@example.com', 'nope']), '--json']);
    expect([mixed.code, mixed.stderr]).toEqual([0, '']);
    expect(JSON.parse(mixed.stdout)).toMatchObject({ created: 1, errors: [{ line: 3 }] });
  });

  it('every import judges the same way (products, an empty file); counts read right', async () => {

    const products = await emk(['products', 'import', '--file', file('products.jsonl', [JSON.stringify({ external_id: 'p-1', title: 'Lamp', price: 'cheap' })])]);
    expect([products.code, products.stderr]).toEqual([1, 'emk: the only row was refused\n']);
    // Counts read right: `1 row`, `1 contact`.
    expect(products.stdout).toMatch(/^1 row: 0 inserted, 0 updated, 0 unchanged, 1 refused\n/);
    const one = await emk(['contacts', 'import', '--file', file('one.csv', ['email', 'cy@example.com'])]);
    expect([one.code, one.stdout]).toEqual([0, '1 contact created, 0 updated, 0 rows refused\n']);
    // An empty file refused nothing.
    expect((await emk(['sync-orders', '--file', file('empty.jsonl', [''])])).code).toBe(0);
  });

  it('--max-errors N stops reading after more than N refused rows: exit 1, committed chunks stay', async () => {
    // Each chunk of 1000 rows: 995 events of a known contact and 5 of an unknown one, then 2,000 more unknown.
    const rows = (key: string) => {
      const lines = ['email,event_name,dedupe_key'];
      for (let i = 0; i < 3000; i++) lines.push(`${i < 995 ? 'ann' : 'ghost'}@example.com,viewed,${key}${i}`);
      return lines;
    };
    const before = await eventCount();
    const tolerated = await emk(['events', 'import', '--file', file('few.csv', rows('t').slice(0, 1001)), '--max-errors', '5', '--json']);
    expect([tolerated.code, tolerated.stderr]).toEqual([0, '']);
    expect(await eventCount()).toBe(before + 995);

    // One chunk in flight: the second chunk passes the limit, and the third is never read.
    const stopped = await emk(['events', 'import', '--file', file('max-errors.csv', rows('s')), '--max-errors', '5', '--concurrency', '1', '--json']);
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toBe(
      'emk: stopped after 2000 rows with 1005 rows refused, more than --max-errors 5; the rows of committed chunks stay committed (re-running is safe)\n',
    );
    expect(JSON.parse(stopped.stdout)).toMatchObject({ rows: 2000, processed: 995, skipped: 0 });
    expect(await eventCount()).toBe(before + 2 * 995);
  });

  it('a bad --max-errors is a usage error naming the flag (exit 2)', async () => {
    const result = await emk(['sync-orders', '--file', file('none.jsonl', ['']), '--max-errors', '-1']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^emk: --max-errors must be at least 0 \(got "-1"\)/);
  });

  it('at a terminal the import draws its progress on stderr (rows, bytes of the file, rows/s); without one, nothing', async () => {
    const lines = ['email,event_name,dedupe_key'];
    for (let i = 0; i < 1500; i++) lines.push(`ann@example.com,scrolled,p${i}`);
    const path = file('tty.csv', lines);
    const quiet = await emk(['events', 'import', '--file', path]);
    expect([quiet.code, quiet.stderr]).toEqual([0, '']);
    const shown = await runEmkInTerminal(['events', 'import', '--file', path, '--db', h().database.url, '--workspace', ws], []);
    // The terminal has no width: every character may sit on a line of its own.
    const screen = shown.stdout.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/[\r\n]/g, '');
    expect(shown.code).toBe(0);
    // The spinner draws its first frame after 80 ms, so a quick import may show only its last line: that names the work.
    expect(screen).toMatch(/importing events from \S+tty\.csv done: 1,500 rows, [\d.]+ KB of [\d.]+ KB \(100 %\), [\d,]+ rows\/s/);
    expect(screen).toMatch(/1500 rows: 0 events stored, 1500 already stored, 0 rejected/);
  });

  it('not found names the noun and the id (exit 1)', async () => {
    await failure(['campaigns', 'send', 'no-such-campaign'], 1, /^emk: campaign no-such-campaign not found\n$/);
    await failure(['campaigns', 'show', 'nope'], 1, /^emk: campaign nope not found\n$/);
    await failure(['feeds', 'preview', 'nope'], 1, /^emk: feed nope not found\n$/);
    await failure(['api-keys', 'revoke', 'nope'], 1, /^emk: API key nope not found\n$/);
    await failure(['attribution', 'recompute', '--order', 'nope'], 1, /^emk: order nope not found\n$/);
    await failure(['contacts', 'erase', '--email', 'nobody@example.com', '--yes'], 1, /^emk: contact nobody@example.com not found\n$/);
  });

  it('usage errors exit 2: an unknown option, a missing required flag or argument, a --workspace that names nothing', async () => {
    await failure(['sync-orders', '--file', 'x.jsonl', '--bogus'], 2, /unknown option '--bogus'/);
    await failure(['events', 'import'], 2, /required option '--file <path>' not specified/);
    await failure(['campaigns', 'send'], 2, /missing required argument 'id'/);
    const unknown = await runEmk(['segments', 'list', '--db', h().database.url, '--workspace', 'Nowhere']);
    expect([unknown.code, unknown.stderr]).toEqual([2, 'emk: workspace Nowhere not found (`npx emk workspaces list` shows them)\n']);
  });
});
