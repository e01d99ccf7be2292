import { once } from 'node:events';
import type { Command } from 'commander';
import { loadConfig, type ConfigOverrides, type EmkConfig } from '../domain/config.js';
import { createServices, emailOptionsOf, type Services } from '../domain/create-services.js';
import { openDatabase } from '../domain/db/database.js';
import { migrateToLatest } from '../domain/db/migrate.js';
import { EmkError } from '../domain/errors.js';
import type { Workspace } from '../domain/workspaces/workspace.schema.js';
import { portFlag } from './options.js';

const debugging = () => process.env.EMK_DEBUG === '1';

/** Options every command takes (docs/cli.md). */
export interface GlobalOptions {
  db?: string;
  workspace?: string;
  json?: boolean;
  migrate?: boolean;
}

export function withGlobalOptions(command: Command): Command {
  return command
    .option('--db <url>', 'database: sqlite:<path> or postgres://… (default $EMK_DATABASE_URL or sqlite:./data/emk.db)')
    .option('--workspace <ref>', 'workspace to act on: its id, name or site id (default $EMK_WORKSPACE, else the only one)')
    .option('--json', 'machine-readable output on stdout')
    .option('--no-migrate', 'do not apply pending migrations first');
}

/** Failures of reaching the database, by driver or system code, in our words. */
const CONNECTION_FAILURES: Record<string, string> = {
  '3D000': 'the database does not exist: create it, or check --db / EMK_DATABASE_URL',
  '28P01': 'the database refused the user name or password in --db / EMK_DATABASE_URL',
  '28000': 'the database refused the connection for this user',
  ECONNREFUSED: 'cannot connect to the database: nothing listens at the address in --db / EMK_DATABASE_URL',
  ENOTFOUND: 'cannot connect to the database: its host name is unknown',
  ETIMEDOUT: 'cannot connect to the database: the connection timed out',
  SQLITE_CANTOPEN: 'cannot open the SQLite database file given in --db / EMK_DATABASE_URL',
  SQLITE_NOTADB: 'the file given in --db / EMK_DATABASE_URL is not a SQLite database',
  SQLITE_READONLY: 'the SQLite database file given in --db / EMK_DATABASE_URL cannot be written: check its permissions',
};

/**
 * One line for a person. Domain errors are written as they are; a database that cannot be reached is said in
 * our words; anything else is unexpected and its text (a driver's message can hold a whole SQL statement with
 * its data) is shown only with EMK_DEBUG=1, with its stack.
 */
export function describeFailure(error: unknown, debug = process.env.EMK_DEBUG === '1'): string {
  if (error instanceof EmkError) return error.message;
  const code = (error as { code?: unknown } | null)?.code;
  const known = typeof code === 'string' ? CONNECTION_FAILURES[code] : undefined;
  if (known) return known;
  if (debug) return error instanceof Error ? (error.stack ?? error.message) : String(error);
  const name = error instanceof Error ? error.constructor.name : typeof error;
  return `unexpected error (${name}${typeof code === 'string' ? ` ${code}` : ''}); run again with EMK_DEBUG=1 for details`;
}

/** Ctrl-C at a prompt. */
export class CancelledError extends EmkError {
  constructor() {
    super('cancelled', 'cancelled', 499, 130);
  }
}

/** What an action returns when it wrote its output to stdout itself, as it went (a streamed export). */
export const WRITTEN: unique symbol = Symbol('written');

/** Writes text pieces to stdout as they come, waiting when the pipe is full, then a newline. */
export async function writeStreamed(pieces: AsyncIterable<string>): Promise<typeof WRITTEN> {
  for await (const piece of pieces) if (!process.stdout.write(piece)) await once(process.stdout, 'drain');
  process.stdout.write('\n');
  return WRITTEN;
}

export interface CommandContext {
  config: EmkConfig;
  json: boolean;
  /** Prompts and spinners only for a person at a terminal. */
  interactive: boolean;
  /** Opens the database (migrating it first unless --no-migrate) on first use. */
  services(): Promise<Services>;
  workspace(): Promise<Workspace>;
  /** Progress and notes: stderr, and only for a person. */
  log(message: string): void;
  /** The command failed though its output is printed (an import that refused every row): `emk: <message>`, exit 1. */
  fail(message: string): void;
}

/**
 * Runs one command: builds its context, prints the result (JSON alone on stdout with --json), maps failures
 * to exit codes (1 failed, 2 usage, 130 cancelled) and always closes the database. Never calls process.exit.
 * Only commands that set a database up (`createsDatabase`: init, seed, migrate, serve) create a missing SQLite file.
 */
export async function runCommand<T>(
  options: GlobalOptions & Omit<ConfigOverrides, 'port'> & { port?: string },
  action: (context: CommandContext) => Promise<T>,
  render: (result: T) => string,
  { createsDatabase = false }: { createsDatabase?: boolean } = {},
): Promise<void> {
  let services: Services | null = null;
  let failure: string | null = null;
  const json = options.json === true;
  try {
    const port = options.port === undefined ? undefined : portFlag(options.port);
    const config = loadConfig(process.env, { ...options, port });
    const interactive = !json && process.stdin.isTTY === true && process.stdout.isTTY === true;
    const context: CommandContext = {
      config,
      json,
      interactive,
      async services() {
        if (!services) {
          const db = openDatabase(config.databaseUrl, {
            readUrl: config.databaseReadUrl,
            maxReadLagSeconds: config.maxReadLagSeconds,
            create: createsDatabase,
          });
          services = createServices(db, {
            email: emailOptionsOf(config),
            onFactSetAside: (fact, error) =>
              process.stderr.write(`emk worker: trigger fact ${fact.id} (${fact.triggerType}) set aside: ${error instanceof Error ? error.message : String(error)}\n`),
          });
          if (options.migrate !== false) await migrateToLatest(db.knex);
        }
        return services;
      },
      async workspace() {
        return (await this.services()).workspaces.resolve(options.workspace ?? process.env.EMK_WORKSPACE);
      },
      log(message) {
        if (interactive) process.stderr.write(`${message}\n`);
      },
      fail(message) {
        failure = message;
      },
    };
    const result = await action(context);
    if (result !== WRITTEN) process.stdout.write(json ? `${JSON.stringify(result)}\n` : `${render(result)}\n`);
    if (failure !== null) {
      process.stderr.write(`emk: ${failure}\n`);
      process.exitCode = 1;
    }
  } catch (error) {
    process.stderr.write(`emk: ${describeFailure(error).replace(/\s*\n\s*/g, debugging() ? '\n' : ' ')}\n`);
    process.exitCode = error instanceof EmkError ? error.exitCode : 1;
  } finally {
    if (services) await (services as Services).close();
  }
}
