import { pathToFileURL } from 'node:url';
import knexFactory from 'knex';

/**
 * What `PRAGMA integrity_check` says of a SQLite file (`ok` when sound), opened read-only: a backup is checked
 * as it lies, without the journal mode and pragmas every connection of ours sets. A file that is no database
 * at all answers the driver's message.
 */
export async function integrityOf(file: string): Promise<string> {
  // knex adds its flags to READWRITE | CREATE, so read-only is asked for in a URI (`mode=ro`).
  const filename = `${pathToFileURL(file).href}?mode=ro`;
  const knex = knexFactory({ client: 'sqlite3', connection: { filename, flags: ['OPEN_URI'] }, useNullAsDefault: true });
  try {
    const rows = (await knex.raw('PRAGMA integrity_check')) as Array<{ integrity_check: string }>;
    return rows.map((row) => row.integrity_check).join('; ');
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    await knex.destroy();
  }
}
