import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { EmkError, NotFoundError } from '../errors.js';

/** A SQLite path that cannot hold a database: one line for a person, exit 1 (docs/cli.md). */
export class DatabasePathError extends EmkError {
  constructor(message: string) {
    super(message, 'database_path', 500, 1);
  }
}

const REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOENT: 'that place cannot hold folders',
  ENOTDIR: 'a part of the path is a file, not a folder',
};

const reasonOf = (error: unknown) => REASONS[(error as { code?: string }).code ?? ''] ?? 'the system refused';

/**
 * Checks a SQLite database file before the driver opens it, so a bad path is one clear line instead of a raw
 * driver code. Only commands that set a database up (`create`) make the file and its missing folders; any other
 * command on a missing file is told to run `emk init`, and leaves nothing behind.
 */
export function prepareSqliteFile(filename: string, create: boolean): void {
  if (filename === ':memory:' || filename.startsWith('file:')) return;
  const path = resolve(filename);
  const existing = statOrNull(path);
  if (existing?.isDirectory()) throw new DatabasePathError(`cannot open the database at ${path}: it is a folder`);
  if (existing) return;
  if (!create) throw new NotFoundError(`no database at ${path}: run emk init`);
  const folder = dirname(path);
  try {
    createFolder(folder);
    accessSync(folder, constants.W_OK);
  } catch (error) {
    throw new DatabasePathError(`cannot create the database at ${path}: ${reasonOf(error)}`);
  }
}

function statOrNull(path: string) {
  try {
    return statSync(path);
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return null;
    throw new DatabasePathError(`cannot open the database at ${path}: ${reasonOf(error)}`);
  }
}

/**
 * mkdir -p, one level at a time from the nearest folder that exists. Node's `mkdirSync(…, { recursive: true })`
 * loops for ever where mkdir answers ENOENT under a folder that exists (`/proc/nope`): it spun at full CPU.
 */
function createFolder(folder: string): void {
  const stat = statOrNull(folder);
  if (stat) {
    if (!stat.isDirectory()) throw Object.assign(new Error(`${folder} is not a folder`), { code: 'ENOTDIR' });
    return;
  }
  createFolder(dirname(folder));
  mkdirSync(folder);
}
