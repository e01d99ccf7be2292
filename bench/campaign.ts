import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { prepareCampaign, sendCampaign } from './campaign-send.js';

/**
 * `npm run bench:campaign -- <database url> [contacts]`: a campaign to N generated subscribers (default
 * 100,000), each message personalised and carrying a 4-product best_selling block, captured; sent by this
 * process's worker. Prints messages per second, total time and peak RSS as one JSON line.
 *
 * `npm run bench` runs the two halves as processes of their own, so the sender's peak RSS is the send's alone:
 * `campaign.js --prepare <url> <contacts>` prints the prepared campaign (campaign-send.ts), and
 * `campaign.js --send <url> <workspace id> <campaign id>` sends it and prints the same JSON line.
 *
 * `--smtp` (with the single-process form) sends over SMTP to a loopback sink in a process of its own
 * (smtp-sink.ts; no rate cap, 5 connections) instead of capturing; `--dkim` adds the campaign's From domain as a
 * sender with a key first, so every message is DKIM-signed (docs/email.md, What signing costs); `--mjml` (with either
 * form, `--prepare` included) writes the same message as an MJML template, compiled once (docs/email.md, Formats).
 */
async function main(): Promise<void> {
  const flags = new Set<string>(process.argv.slice(2).filter((a) => a === '--smtp' || a === '--dkim' || a === '--mjml'));
  const args = process.argv.slice(2).filter((a) => !flags.has(a));
  const print = (value: unknown): void => void process.stdout.write(`${JSON.stringify(value)}\n`);
  if (args[0] === '--prepare') {
    const [, url, count] = args;
    if (!url || !count) throw new Error('usage: campaign.js --prepare <database url> <contacts>');
    return print(await prepareCampaign(url, Number(count), { mjml: flags.has('--mjml') }));
  }
  if (args[0] === '--send') {
    const [, url, workspaceId, campaignId] = args;
    if (!url || !workspaceId || !campaignId) throw new Error('usage: campaign.js --send <database url> <workspace id> <campaign id>');
    return print(await sendCampaign(url, { workspaceId, campaignId }));
  }
  const [url, count = '100000'] = args;
  if (!url) throw new Error('usage: campaign.js <database url> [contacts]');
  const prepared = await prepareCampaign(url, Number(count), { signed: flags.has('--dkim'), mjml: flags.has('--mjml') });
  const format = flags.has('--mjml') ? 'mjml' : 'html';
  if (!flags.has('--smtp')) return print({ seededSeconds: prepared.seededSeconds, format, ...(await sendCampaign(url, prepared)) });
  const sink = spawn(process.execPath, [join(import.meta.dirname, 'smtp-sink.js')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = once(sink, 'exit');
  const lines = createInterface({ input: sink.stdout })[Symbol.asyncIterator]();
  try {
    const { url: smtpUrl } = JSON.parse((await lines.next()).value as string) as { url: string };
    const email = { baseUrl: 'http://localhost:8080', smtpUrl, smtpRatePerSecond: 0, smtpMaxConnections: 5 };
    const result = await sendCampaign(url, prepared, email);
    sink.kill('SIGTERM');
    const { received } = JSON.parse((await lines.next()).value as string) as { received: number };
    print({ seededSeconds: prepared.seededSeconds, format, transport: 'smtp', dkim: flags.has('--dkim'), received, ...result });
  } finally {
    if (sink.exitCode === null) sink.kill('SIGTERM');
    await exited;
  }
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
