import { prepareCampaign, sendCampaign } from './campaign-send.js';

/**
 * `npm run bench:campaign -- <database url> [contacts]`: a campaign to N generated subscribers (default
 * 100,000), each message personalised and carrying a 4-product best_selling block, captured; sent by this
 * process's worker. Prints messages per second, total time and peak RSS as one JSON line.
 *
 * `npm run bench` runs the two halves as processes of their own, so the sender's peak RSS is the send's alone:
 * `campaign.js --prepare <url> <contacts>` prints the prepared campaign (campaign-send.ts), and
 * `campaign.js --send <url> <workspace id> <campaign id>` sends it and prints the same JSON line.
 */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const print = (value: unknown): void => void process.stdout.write(`${JSON.stringify(value)}\n`);
  if (args[0] === '--prepare') {
    const [, url, count] = args;
    if (!url || !count) throw new Error('usage: campaign.js --prepare <database url> <contacts>');
    return print(await prepareCampaign(url, Number(count)));
  }
  if (args[0] === '--send') {
    const [, url, workspaceId, campaignId] = args;
    if (!url || !workspaceId || !campaignId) throw new Error('usage: campaign.js --send <database url> <workspace id> <campaign id>');
    return print(await sendCampaign(url, { workspaceId, campaignId }));
  }
  const [url, count = '100000'] = args;
  if (!url) throw new Error('usage: campaign.js <database url> [contacts]');
  const prepared = await prepareCampaign(url, Number(count));
  print({ seededSeconds: prepared.seededSeconds, ...(await sendCampaign(url, prepared)) });
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
