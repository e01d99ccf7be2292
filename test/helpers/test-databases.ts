import { randomUUID } from 'node:crypto';
import { copyFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { inject } from 'vitest';
import { openDatabase, type Database } from '../../src/domain/db/database.js';

export const TEST_TMP_ROOT = resolve(import.meta.dirname, '../../.tmp/tests');

export type DialectName = 'sqlite' | 'postgres';

/** SQLite always; PostgreSQL too when EMK_TEST_DATABASE_URL is set. */
export const DIALECTS: DialectName[] = process.env.EMK_TEST_DATABASE_URL ? ['sqlite', 'postgres'] : ['sqlite'];

export function databaseUrlWithName(baseUrl: string, name: string): string {
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export function adminDatabase(baseUrl: string): Database {
  return openDatabase(baseUrl);
}

export interface TestDatabase {
  url: string;
  /** Removes the database (the file, or the PostgreSQL database). */
  drop(): Promise<void>;
}

const CREATE_RETRIES = 20;

/** A fresh, migrated database of its own, cloned from the run's template. */
export async function createTestDatabase(dialect: DialectName): Promise<TestDatabase> {
  const id = randomUUID().slice(0, 8);
  if (dialect === 'sqlite') {
    const file = join(inject('tmpDir'), `db-${id}.db`);
    copyFileSync(inject('sqliteTemplate'), file);
    return {
      url: `sqlite:${file}`,
      drop: async () => {
        for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
      },
    };
  }
  const baseUrl = process.env.EMK_TEST_DATABASE_URL!;
  const template = inject('postgresTemplate')!;
  const name = `emk_t_${template.slice('emk_tpl_'.length)}_${id}`;
  const admin = adminDatabase(baseUrl);
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        await admin.knex.raw('CREATE DATABASE ?? TEMPLATE ??', [name, template]);
        break;
      } catch (error) {
        // Another file is cloning the template at this moment.
        if (attempt >= CREATE_RETRIES || !/being accessed by other users/.test(String(error))) throw error;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
  } finally {
    await admin.close();
  }
  return {
    url: databaseUrlWithName(baseUrl, name),
    drop: async () => {
      const again = adminDatabase(baseUrl);
      try {
        await again.knex.raw('DROP DATABASE IF EXISTS ?? WITH (FORCE)', [name]);
      } finally {
        await again.close();
      }
    },
  };
}
