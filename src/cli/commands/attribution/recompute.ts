import { Command } from 'commander';
import { UsageError } from '../../../domain/errors.js';
import { parseTimestamp } from '../../../domain/shared/time.js';
import { namingNotFound } from '../../not-found.js';
import { plural } from '../../plural.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';

interface RecomputeFlags extends GlobalOptions {
  since?: string;
  order?: string;
}

/** `--since`: a date (midnight UTC) or an RFC 3339 time. */
function parseSince(text: string): number {
  const ms = parseTimestamp(/^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : text);
  if (ms === null) throw new UsageError(`--since must be a date (2026-01-31) or an RFC 3339 time, not "${text}"`);
  return ms;
}

export function attributionRecomputeCommand(): Command {
  return withGlobalOptions(
    new Command('recompute')
      .description("re-attribute stored webhook and sync orders from their ordered_at against stored clicks and opens")
      .option('--since <date>', 'only orders placed on or after this date or time')
      .option('--order <id>', 'only this order'),
  ).action((flags: RecomputeFlags) =>
    runCommand(
      flags,
      async (context) => {
        const since = flags.since === undefined ? undefined : parseSince(flags.since);
        const workspace = await context.workspace();
        context.log(`re-attributing the orders of ${workspace.name}…`);
        const services = await context.services();
        const recompute = () =>
          services.attribution.recompute(workspace.id, {
            ...(since !== undefined ? { since } : {}),
            ...(flags.order !== undefined ? { orderId: flags.order } : {}),
          });
        return flags.order === undefined ? recompute() : namingNotFound('order', flags.order, recompute);
      },
      ({ examined, changed }) => `${plural(changed, 'order')} changed (${examined} examined)`,
    ),
  );
}
