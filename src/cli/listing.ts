import { Command } from 'commander';
import type { Services } from '../domain/create-services.js';
import type { Page } from '../domain/shared/paging.js';
import { namingNotFound } from './not-found.js';
import { pagingFlags } from './options.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from './run-command.js';
import { table } from './table.js';

/** A table column: its heading, the cell of a record, and whether it holds a number (aligned right). */
export interface Column<R> {
  heading: string;
  cell: (record: R) => string | number | null;
  numeric?: boolean;
}

/** A cell on one line: objects as JSON, line breaks (of an HTML body) folded. */
const shown = (value: unknown) =>
  (value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value)).replace(/\s*\n\s*/g, ' ');

interface ListOptions extends GlobalOptions {
  page?: string;
  perPage?: string;
}

/**
 * `emk <nouns> list`: one page of the API's list (`--page`, `--per-page`), by the service function its route
 * calls; `--json` prints the API's body `{"data":[…],"meta":{…}}`, a person gets a table and the total.
 * `filters` adds the command's own flags and turns them into the service's query.
 */
export function listCommand<R, F extends object = object>(spec: {
  plural: string;
  columns: Column<R>[];
  list: (services: Services, workspaceId: string, options: F & ListOptions, paging: { page: number; perPage: number }) => Promise<Page<R>>;
  filters?: (command: Command) => Command;
}): Command {
  const command = withGlobalOptions(new Command('list').description(`list ${spec.plural}, newest first`))
    .option('--page <n>', 'page number, from 1')
    .option('--per-page <n>', 'records per page (at most 500; default 50)');
  return (spec.filters ? spec.filters(command) : command).action((options: F & ListOptions) =>
    runCommand(
      options,
      async (context) => {
        const paging = pagingFlags(options);
        const services = await context.services();
        const workspace = await context.workspace();
        return spec.list(services, workspace.id, options, paging);
      },
      (page) => {
        if (page.data.length === 0) return `no ${spec.plural}${page.meta.total > 0 ? ` on page ${page.meta.page} (${page.meta.total} in all)` : ''}`;
        const rows = page.data.map((record) => spec.columns.map((column) => shown(column.cell(record))));
        const right = spec.columns.flatMap((column, i) => (column.numeric ? [i] : []));
        const from = (page.meta.page - 1) * page.meta.perPage + 1;
        return `${table(spec.columns.map((c) => c.heading), rows, right)}\n${from}–${from + page.data.length - 1} of ${page.meta.total}`;
      },
    ),
  );
}

/** `emk <nouns> show ID`: the API's record (`--json`), or its fields one a line; an unknown id exits 1 naming it. */
export function showCommand<R extends object>(spec: { singular: string; get: (services: Services, workspaceId: string, id: string) => Promise<R> }): Command {
  return withGlobalOptions(new Command('show').argument('<id>', `${spec.singular} id`).description(`show one ${spec.singular}`)).action(
    (id: string, options: GlobalOptions) =>
      runCommand(
        options,
        async (context) => {
          const services = await context.services();
          const workspace = await context.workspace();
          return namingNotFound(spec.singular, id, () => spec.get(services, workspace.id, id));
        },
        (record) => table(['field', 'value'], Object.entries(record).map(([field, value]) => [field, shown(value)]), []),
      ),
  );
}
