import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../../src/domain/db/database.js';
import { migrateToLatest } from '../../src/domain/db/migrate.js';
import { adminDatabase, databaseUrlWithName, TEST_TMP_ROOT } from './test-databases.js';

declare module 'vitest' {
  export interface ProvidedContext {
    tmpDir: string;
    sqliteTemplate: string;
    postgresTemplate: string | null;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Migrates one template database per dialect once; every test file clones it (a file copy on SQLite,
 * CREATE DATABASE … TEMPLATE on PostgreSQL) so files run in parallel on databases of their own.
 */
export default async function setup(project: TestProject) {
  // Runs may overlap (two terminals, CI): everything a run makes is named after its process id.
  const runId = `${process.pid}`;
  const tmpDir = join(TEST_TMP_ROOT, runId);
  rmSync(tmpDir, { recursive: true, force: true });
  mkdirSync(tmpDir, { recursive: true });
  project.provide('tmpDir', tmpDir);

  const sqliteTemplate = join(tmpDir, 'template.db');
  const sqlite = openDatabase(`sqlite:${sqliteTemplate}`);
  await migrateToLatest(sqlite.knex);
  await sqlite.close();
  project.provide('sqliteTemplate', sqliteTemplate);

  const baseUrl = process.env.EMK_TEST_DATABASE_URL;
  if (!baseUrl) {
    project.provide('postgresTemplate', null);
    return async () => rmSync(tmpDir, { recursive: true, force: true });
  }

  const admin = adminDatabase(baseUrl);
  // Leftovers of runs that were killed before their teardown (their process is gone).
  const stale = await admin.knex.raw("SELECT datname FROM pg_database WHERE datname ~ '^emk_t(pl)?_[0-9]+'");
  for (const { datname } of stale.rows as Array<{ datname: string }>) {
    const pid = Number(/^emk_t(?:pl)?_(\d+)/.exec(datname)![1]);
    if (!isAlive(pid)) await admin.knex.raw('DROP DATABASE IF EXISTS ?? WITH (FORCE)', [datname]);
  }
  const templateName = `emk_tpl_${runId}`;
  await admin.knex.raw('CREATE DATABASE ??', [templateName]);
  const template = openDatabase(databaseUrlWithName(baseUrl, templateName));
  await migrateToLatest(template.knex);
  await template.close();
  project.provide('postgresTemplate', templateName);

  return async () => {
    const left = await admin.knex.raw('SELECT datname FROM pg_database WHERE datname ~ ?', [`^emk_t(pl)?_${runId}(_|$)`]);
    for (const { datname } of left.rows as Array<{ datname: string }>) {
      await admin.knex.raw('DROP DATABASE IF EXISTS ?? WITH (FORCE)', [datname]);
    }
    await admin.close();
    rmSync(tmpDir, { recursive: true, force: true });
  };
}
