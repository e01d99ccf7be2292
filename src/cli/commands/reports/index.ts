import { Command } from 'commander';
import type { DeliverabilityReport } from '../../../domain/reports/report.schema.js';
import { daysFlag } from '../../options.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';
import { table } from '../../table.js';
import { plural } from '../../plural.js';

interface RevenueOptions extends GlobalOptions {
  from?: string;
  to?: string;
}

const money = (value: number) => value.toFixed(2);

/** `emk report revenue [--from] [--to]`: GET /reports/revenue as a table, or its body with --json. */
function revenueCommand(): Command {
  return withGlobalOptions(
    new Command('revenue')
      .description('net revenue credited to each campaign and flow, and the store\'s total')
      .option('--from <time>', 'orders placed from (RFC 3339 or YYYY-MM-DD; default 30 days ago)')
      .option('--to <time>', 'orders placed before (default now)'),
  ).action((options: RevenueOptions) =>
    runCommand(
      options,
      async (context) => {
        const services = await context.services();
        const workspace = await context.workspace();
        return services.reports.revenue(workspace.id, { ...(options.from ? { from: options.from } : {}), ...(options.to ? { to: options.to } : {}) });
      },
      ({ data, total }) => {
        // The store's own revenue (every order, with a contact or without one) below what campaigns and flows earned.
        const all = total.map((t) => `all orders: ${plural(t.orders, 'order')}, ${money(t.revenue)} ${t.currency}`);
        const rows = data.map((r) => [r.campaign_id ? 'campaign' : 'flow', r.name ?? r.campaign_id ?? r.flow_id ?? '', String(r.orders), money(r.revenue), r.currency]);
        const attributed = data.length === 0 ? 'no attributed revenue in this period' : table(['source', 'name', 'orders', 'revenue', 'currency'], rows, [2, 3]);
        return [attributed, ...all].join('\n');
      },
    ),
  );
}

const percent = (rate: number) => `${(rate * 100).toFixed(2)}%`;

interface DeliverabilityOptions extends GlobalOptions {
  days?: string;
}

/**
 * `emk report deliverability [--days N]`: GET /reports/deliverability as a table (a `!` column marks a rate
 * above a mailbox provider's threshold, `flags` names it), or its body with --json.
 */
function deliverabilityCommand(): Command {
  return withGlobalOptions(
    new Command('deliverability')
      .description('delivered, bounced, complained and unsubscribed per campaign and flow, rates over the thresholds flagged')
      .option('--days <n>', 'messages of the last N days (default 30)'),
  ).action((options: DeliverabilityOptions) =>
    runCommand(
      options,
      async (context) => {
        const days = options.days === undefined ? undefined : daysFlag(options.days);
        const services = await context.services();
        const workspace = await context.workspace();
        return services.reports.deliverability(workspace.id, days === undefined ? {} : { days });
      },
      ({ days, data }: DeliverabilityReport) => {
        if (data.length === 0) return `no campaign or flow messages sent in the last ${plural(days, 'day')}`;
        const rows = data.map((r) => [
          r.flags.length > 0 ? '!' : '',
          r.campaign_id ? 'campaign' : 'flow',
          r.name ?? r.campaign_id ?? r.flow_id ?? '',
          String(r.sent),
          `${r.delivered} ${percent(r.delivery_rate)}`,
          `${r.bounced} ${percent(r.bounce_rate)}`,
          `${r.complained} ${percent(r.complaint_rate)}`,
          `${r.unsubscribed} ${percent(r.unsubscribe_rate)}`,
          r.flags.join(','),
        ]);
        return table(['!', 'source', 'name', 'sent', 'delivered', 'bounced', 'complained', 'unsubscribed', 'flags'], rows, [3, 4, 5, 6, 7]);
      },
    ),
  );
}

/** `emk report <name>`. */
export function reportCommand(): Command {
  return new Command('report').description('reports').addCommand(revenueCommand().exitOverride()).addCommand(deliverabilityCommand().exitOverride());
}
