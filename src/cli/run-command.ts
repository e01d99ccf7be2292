import type { Command } from 'commander';
import { loadConfig, type ConfigOverrides, type EmkConfig } from '../domain/config.js';
import { createServices, type Services } from '../domain/create-services.js';
import { openDatabase } from '../domain/db/database.js';
import { migrateToLatest } from '../domain/db/migrate.js';
import { EmkError } from '../domain/errors.js';
import type { Workspace } from '../domain/workspaces/workspace.schema.js';

/** Options every command takes (CONTRACT §2). */
export interface GlobalOptions {
  db?: string;
  workspace?: string;
  json?: boolean;
  migrate?: boolean;
}

export function withGlobalOptions(command: Command): Command {
  return command
    .option('--db <url>', 'database: sqlite:<path> or postgres://… (default $EMK_DATABASE_URL or sqlite:./data/emk.db)')
    .option('--workspace <id>', 'workspace to act on (default: the only one)')
    .option('--json', 'machine-readable output on stdout')
    .option('--no-migrate', 'do not apply pending migrations first');
}

const LONGEST_MESSAGE = 600;

/**
 * Domain errors are written as they are; anything else is unexpected, and a database driver's message can
 * hold a whole SQL statement with its data: shown shortened, keeping the end, where the driver's reason is.
 */
function describeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof EmkError || message.length <= LONGEST_MESSAGE) return message;
  return `unexpected error: …${message.slice(-LONGEST_MESSAGE)}`;
}

/** Ctrl-C at a prompt. */
export class CancelledError extends EmkError {
  constructor() {
    super('cancelled', 'cancelled', 499, 130);
  }
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
}

/**
 * Runs one command: builds its context, prints the result (JSON alone on stdout with --json), maps failures
 * to exit codes (1 failed, 2 usage, 130 cancelled) and always closes the database. Never calls process.exit.
 */
export async function runCommand<T>(
  options: GlobalOptions & ConfigOverrides,
  action: (context: CommandContext) => Promise<T>,
  render: (result: T) => string,
): Promise<void> {
  let services: Services | null = null;
  const json = options.json === true;
  try {
    const config = loadConfig(process.env, options);
    const interactive = !json && process.stdin.isTTY === true && process.stdout.isTTY === true;
    const context: CommandContext = {
      config,
      json,
      interactive,
      async services() {
        if (!services) {
          const db = openDatabase(config.databaseUrl);
          services = createServices(db);
          if (options.migrate !== false) await migrateToLatest(db.knex);
        }
        return services;
      },
      async workspace() {
        return (await this.services()).workspaces.resolve(options.workspace);
      },
      log(message) {
        if (interactive) process.stderr.write(`${message}\n`);
      },
    };
    const result = await action(context);
    process.stdout.write(json ? `${JSON.stringify(result)}\n` : `${render(result)}\n`);
  } catch (error) {
    process.stderr.write(`emk: ${describeFailure(error)}\n`);
    process.exitCode = error instanceof EmkError ? error.exitCode : 1;
  } finally {
    if (services) await (services as Services).close();
  }
}
