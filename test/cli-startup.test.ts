import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { runEmk } from './helpers/cli.js';

/**
 * What an `emk` process loads (docs/architecture.md, "Optional libraries load on first use"): node-postgres,
 * nodemailer, html-to-text and jose cost about a quarter of a command's start, and a command on SQLite that
 * sends nothing and checks no token needs none of them.
 */
const dir = mkdtempSync(join(tmpdir(), 'emk-startup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const record = join(dir, 'loaded.txt');
// ES modules are seen by a load hook (it runs on a thread of its own in Node 20, hence the file); CommonJS ones
// (knex, and what createRequire loads) are listed from the require cache as the process exits.
writeFileSync(
  join(dir, 'hooks.mjs'),
  `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) { appendFileSync(${JSON.stringify(record)}, url + '\\n'); return next(url, context); }
`,
);
writeFileSync(
  join(dir, 'record.mjs'),
  `import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
register(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});
const cache = createRequire(import.meta.url).cache;
process.on('exit', () => appendFileSync(${JSON.stringify(record)}, Object.keys(cache).join('\\n') + '\\n'));
`,
);

/** The packages (`node_modules/<name>/…`) a run of `emk <args>` loaded. */
async function packagesLoadedBy(args: string[]): Promise<Set<string>> {
  writeFileSync(record, '');
  const result = await runEmk(args, { NODE_OPTIONS: `--import ${pathToFileURL(join(dir, 'record.mjs')).href}` });
  expect(result.code, result.stderr).toBe(0);
  const names = readFileSync(record, 'utf8').split('\n').flatMap((line) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(line)?.[1] ?? []);
  return new Set(names);
}

const OPTIONAL = ['pg', 'nodemailer', 'html-to-text', 'jose'];

it('a command on SQLite that sends nothing loads neither node-postgres, nodemailer, html-to-text nor jose', async () => {
  const db = `sqlite:${join(dir, 'emk.db')}`;
  for (const args of [
    ['init', '--db', db, '--json', '--name', 'Startup', '--domain', 'startup.test'],
    ['campaigns', 'list', '--db', db, '--json'],
  ]) {
    const loaded = await packagesLoadedBy(args);
    // The barrier: the recording saw what every such command loads, an ES module and CommonJS ones.
    expect([...loaded].filter((name) => ['zod', 'knex', 'sqlite3'].includes(name)).sort(), args.join(' ')).toEqual(['knex', 'sqlite3', 'zod']);
    expect(OPTIONAL.filter((name) => loaded.has(name)), args.join(' ')).toEqual([]);
  }
});
