import { copyFile, open, rename, rm, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { openDatabase, sqlitePathOf } from '../db/database.js';
import { integrityOf } from '../db/sqlite-file.js';
import { EmkError } from '../errors.js';

/*
 * `emk backup` and `emk restore` of a SQLite database (docs/operations.md, "Backups"). PostgreSQL has its own
 * machinery for this (pg_dump, base backups, point-in-time recovery), which emk does not redo.
 */

/** A backup or restore refused or failed: exit 1. */
export class BackupError extends EmkError {
  constructor(message: string) {
    super(message, 'backup_failed', 409, 1);
  }
}

const POSTGRES_BACKUPS =
  'emk backup and restore handle SQLite files; back PostgreSQL up with its own tools (pg_dump, base backups with ' +
  'WAL archiving for point-in-time recovery): see docs/operations.md, "Backups"';

export interface BackupResult {
  file: string;
  bytes: number;
  integrity: 'ok';
}

/**
 * A consistent copy of the database in `file` while others keep writing: SQLite's `VACUUM INTO` reads the
 * database in one read transaction, so the copy holds every transaction committed before it began and none
 * after. It is written beside `file` and renamed into place once it passes `PRAGMA integrity_check`: `file`
 * is either a whole, sound backup or absent.
 */
export async function backupDatabase(url: string, file: string): Promise<BackupResult> {
  const target = resolve(file);
  if (existsSync(target)) throw new BackupError(`${file} already exists: choose a new file for the backup`);
  const path = sqlitePathOf(url);
  if (path !== null && !existsSync(path)) throw new BackupError(`there is no database at ${path}`);
  const database = openDatabase(url);
  const partial = `${target}.partial`;
  try {
    if (!database.dialect.backupInto) throw new BackupError(POSTGRES_BACKUPS);
    await rm(partial, { force: true });
    await database.dialect.backupInto(database.knex, partial);
    const integrity = await integrityOf(partial);
    if (integrity !== 'ok') throw new BackupError(`the backup failed its integrity check (${integrity}); nothing was kept`);
    await syncFile(partial);
    await rename(partial, target);
    await syncFile(dirname(target));
    return { file: target, bytes: (await stat(target)).size, integrity: 'ok' };
  } finally {
    await rm(partial, { force: true });
    await database.close();
  }
}

export interface RestoreResult {
  database: string;
  from: string;
}

/**
 * Puts a backup file in place of the SQLite database of `url`. Refuses a backup that fails `PRAGMA
 * integrity_check`; an existing database unless `force`; and, even with `force`, a database that looks in use:
 * its `-wal` or `-shm` file exists (SQLite removes both when the last connection closes cleanly; one left by a
 * crash goes away when any emk command opens and closes the database, e.g. `emk migrate`).
 */
export async function restoreDatabase(url: string, from: string, options: { force?: boolean } = {}): Promise<RestoreResult> {
  const path = sqlitePathOf(url);
  if (path === null) throw new BackupError(POSTGRES_BACKUPS);
  const target = resolve(path);
  const source = resolve(from);
  if (!existsSync(source)) throw new BackupError(`${from} does not exist`);
  const integrity = await integrityOf(source);
  if (integrity !== 'ok') throw new BackupError(`${from} is not a sound SQLite database (${integrity})`);
  if (existsSync(target) && !options.force) throw new BackupError(`${path} exists: pass --force to replace it with the backup`);
  for (const suffix of ['-wal', '-shm']) {
    if (existsSync(`${target}${suffix}`)) {
      throw new BackupError(`${path} looks in use (${path}${suffix} exists): stop emk serve and every worker first`);
    }
  }
  // Copied beside the database, then renamed over it: the database is the old one or the backup, never half of one.
  const restoring = `${target}.restoring`;
  try {
    await copyFile(source, restoring);
    await syncFile(restoring);
    await rename(restoring, target);
    await syncFile(dirname(target));
  } finally {
    await rm(restoring, { force: true });
  }
  return { database: target, from: source };
}

/** Flushes a file (or a directory's entries) to the disk. */
async function syncFile(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
