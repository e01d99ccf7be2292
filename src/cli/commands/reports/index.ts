import { Command } from 'commander';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';

interface RevenueOptions extends GlobalOptions {
  from?: string;
  to?: string;
}

const money = (value: number) => value.toFixed(2);

/** `emk report revenue [--from] [--to]`: GET /reports/revenue as a table, or its body with --json. */
function revenueCommand(): Command {
  return withGlobalOptions(
    new Command('revenue')
      .description('net revenue credited to each campaign and flow')
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
      ({ data }) => {
        if (data.length === 0) return 'no attributed revenue in this period';
        const rows = data.map((r) => [r.campaign_id ? 'campaign' : 'flow', r.name ?? r.campaign_id ?? r.flow_id ?? '', String(r.orders), money(r.revenue), r.currency]);
        const header = ['source', 'name', 'orders', 'revenue', 'currency'];
        const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
        const line = (cells: string[]) => cells.map((c, i) => (i === 2 || i === 3 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
        return [line(header), ...rows.map(line)].join('\n');
      },
    ),
  );
}

/** `emk report <name>`. */
export function reportCommand(): Command {
  return new Command('report').description('reports').addCommand(revenueCommand().exitOverride());
}
