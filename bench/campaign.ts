import { createServices } from '../src/domain/create-services.js';
import { openDatabase } from '../src/domain/db/database.js';
import { migrateToLatest } from '../src/domain/db/migrate.js';
import { runDueJobs, workerOptionsFor } from '../src/worker/worker.js';
import { seedContacts } from './events-volume.js';

/**
 * `npm run bench:campaign -- <database url> [contacts]`: a campaign to N generated subscribers (default
 * 100,000), each message personalised and carrying a 4-product best_selling block, captured; sent by this
 * process's worker. Prints messages per second, total time and peak RSS as one JSON line.
 */
async function main(): Promise<void> {
  const [url, count = '100000'] = process.argv.slice(2);
  if (!url) throw new Error('usage: campaign.js <database url> [contacts]');
  const contacts = Number(count);
  const db = openDatabase(url);
  await migrateToLatest(db.knex);
  const services = createServices(db);
  try {
    const { workspace } = await services.workspaces.bootstrap({ name: 'Campaign bench', domain: 'bench.test' });
    const seeding = performance.now();
    await seedContacts(url, workspace.id, contacts);
    const seeded = (performance.now() - seeding) / 1000;
    const feed = await services.feeds.create(workspace.id, { name: 'Best sellers', recommendation_type: 'best_selling', max_items: 4 });
    const campaign = await services.campaigns.create(workspace.id, {
      name: 'Bench',
      subject: 'Picks for {{ contact.email }}',
      html: `<p>Hello {{ contact.email }}</p>{% products feed: "${feed.feed.id}", limit: 4, fallback: "best_selling" %}<a href="{{ item.url }}">{{ item.title }}</a>{% endproducts %}<a href="https://bench.test/sale">Sale</a><a href="{{ unsubscribe_url }}">Unsubscribe</a>`,
    });
    let peakRss = process.memoryUsage().rss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
    const started = performance.now();
    const { recipients } = await services.campaigns.send(workspace.id, campaign.id);
    const fixed = (performance.now() - started) / 1000;
    await runDueJobs(workerOptionsFor(services, { concurrency: db.dialect.writeConcurrency > 1 ? 4 : 2 }));
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    const report = await services.campaigns.report(workspace.id, campaign.id);
    process.stdout.write(
      `${JSON.stringify({ database: db.dialect.name, recipients, captured: report.sent, failed: report.failed, seededSeconds: +seeded.toFixed(1), recipientsFixedSeconds: +fixed.toFixed(2), totalSeconds: +seconds.toFixed(1), messagesPerSecond: Math.round(report.sent / seconds), peakRssMiB: Math.round(peakRss / 1048576) })}\n`,
    );
  } finally {
    await services.close();
  }
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
