import { join } from 'node:path';
import pg from 'pg';
import type { CampaignSendResult, PreparedCampaign } from './campaign-send.js';
import { runJson, runMeasuredNode, spawnNode, STOP_TIMEOUT_MS, type ChildProcessHandle, type ServerProcess } from './processes.js';

/**
 * The campaign rows of `npm run bench` (issue 13): the send of campaign-send.ts by one process, the same send
 * split over several `emk worker` processes (PostgreSQL), and the signed tracking links of a captured message
 * for the `/t/c` and `/t/o` load rows. Each step runs as processes of its own.
 */

/** Where the bench's processes live. */
export interface CampaignBenchContext {
  /** bin/emk */
  emk: string;
  root: string;
  env: NodeJS.ProcessEnv;
}

const CAMPAIGN_SCRIPT = join(import.meta.dirname, 'campaign.js');
/** Issue 13's goals: at least this many messages a second (100,000 in under a minute), peak RSS under 400 MB. */
export const GOAL_MESSAGES_PER_SECOND = 2_000;
export const GOAL_PEAK_RSS_BYTES = 400e6;
const BLOCK_PRODUCTS = 4;
/** A send that has not finished by then has failed (the slowest plausible rate is far above 20 messages/s). */
const deadlineMs = (contacts: number) => 120_000 + contacts * 50;
const POLL_MS = 100;

const log = (message: string) => process.stderr.write(`${message}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How the bench's campaign is written: an HTML template, or the same message in MJML (campaign-send.ts). */
export type CampaignFormat = 'html' | 'mjml';

/** `campaign.js --prepare`: a workspace with `contacts` subscribers and the draft campaign, in a process of its own. */
export async function prepareCampaignProcess(url: string, contacts: number, ctx: CampaignBenchContext, format: CampaignFormat = 'html'): Promise<PreparedCampaign> {
  const args = [CAMPAIGN_SCRIPT, '--prepare', url, String(contacts), ...(format === 'mjml' ? ['--mjml'] : [])];
  const { summary } = await runMeasuredNode<PreparedCampaign>('campaign.js --prepare', args, ctx.env, ctx.root);
  return summary;
}

export interface CampaignRow {
  database: string;
  format: CampaignFormat;
  recipients: number;
  captured: number;
  failed: number;
  blockProducts: number;
  seededSeconds: number;
  recipientsFixedSeconds: number;
  /** From the send call until every message reached an end, as the sending process timed it. */
  seconds: number;
  messagesPerSecond: number;
  /** VmHWM of the sending process, read from outside. */
  peakRssKib: number | null;
}

/** Checks a finished send: every recipient captured, none failed, each message with the full block. */
function checkSend(where: string, contacts: number, result: Pick<CampaignSendResult, 'recipients' | 'captured' | 'failed'>, failures: string[]) {
  if (result.recipients !== contacts || result.captured !== contacts || result.failed !== 0) {
    failures.push(`${where}: ${result.recipients} recipients, ${result.captured} captured, ${result.failed} failed (expected ${contacts} captured)`);
  }
}

/** The send of one process (`campaign.js --send`), prepared by another, so the peak RSS is the send's own. */
export async function runCampaignSend(
  label: string,
  url: string,
  contacts: number,
  ctx: CampaignBenchContext,
  failures: string[],
  format: CampaignFormat = 'html',
): Promise<CampaignRow> {
  log(`campaign send on ${label} (${format}): preparing ${contacts} subscribers…`);
  const prepared = await prepareCampaignProcess(url, contacts, ctx, format);
  log(`campaign send on ${label} (${format}): sending with one process…`);
  const run = await runMeasuredNode<CampaignSendResult>(
    'campaign.js --send',
    [CAMPAIGN_SCRIPT, '--send', url, prepared.workspaceId, prepared.campaignId],
    ctx.env,
    ctx.root,
  );
  const result = run.summary;
  checkSend(`campaign send on ${label} (${format})`, contacts, result, failures);
  if (result.blockProducts !== BLOCK_PRODUCTS) {
    failures.push(`campaign send on ${label} (${format}): the first message's block shows ${result.blockProducts} products, not ${BLOCK_PRODUCTS}`);
  }
  return {
    database: label,
    format,
    recipients: result.recipients,
    captured: result.captured,
    failed: result.failed,
    blockProducts: result.blockProducts,
    seededSeconds: prepared.seededSeconds,
    recipientsFixedSeconds: result.recipientsFixedSeconds,
    seconds: result.totalSeconds,
    messagesPerSecond: result.messagesPerSecond,
    peakRssKib: run.peakRssKib,
  };
}

export interface WorkersRow {
  database: string;
  workers: number;
  recipients: number;
  /** The campaign row's `sent_at − started_at`: from fixing the recipients to the last batch's end. */
  seconds: number;
  /** From starting `emk campaigns send --detach` until the bench saw the status `sent`. */
  wallSeconds: number;
  messagesPerSecond: number;
  /** (campaign, contact) pairs with more than one message. */
  duplicates: number;
  statuses: Record<string, number>;
  /** The largest VmHWM of the workers. */
  peakRssKib: number | null;
  /** CPU seconds each worker used (how the work was shared). */
  cpuSeconds: Array<number | null>;
}

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * The same send split over `workers` `emk worker` processes on PostgreSQL: the workers run first, the send is
 * started with `emk campaigns send --detach`, and the bench polls the campaign until it is `sent`. Then the
 * workers get SIGTERM (each must exit 0) and the messages are counted: per status, and (campaign, contact)
 * pairs with more than one message, which must be none.
 */
export async function runCampaignWorkers(url: string, contacts: number, workers: number, ctx: CampaignBenchContext, failures: string[]): Promise<WorkersRow> {
  log(`campaign send over ${workers} workers on postgres: preparing ${contacts} subscribers…`);
  const prepared = await prepareCampaignProcess(url, contacts, ctx);
  const children: ChildProcessHandle[] = [];
  const stopAll = async () => {
    for (const [i, child] of children.entries()) {
      const { code, killed } = await child.stop();
      if (killed) failures.push(`emk worker ${i + 1} had not exited ${STOP_TIMEOUT_MS} ms after SIGTERM and was killed`);
      else if (code !== 0) failures.push(`emk worker ${i + 1} exited with code ${code} after SIGTERM: ${child.stderr().slice(-300)}`);
    }
    children.length = 0;
  };
  try {
    return await withClient(url, async (client) => {
      const connections = async () =>
        Number((await client.query('SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()')).rows[0].n);
      const before = await connections();
      for (let i = 0; i < workers; i++) {
        children.push(spawnNode(`emk worker ${i + 1}`, [ctx.emk, 'worker', '--db', url], ctx.env, ctx.root));
      }
      // Ready once each has opened its connections (it checked the migrations and looked for jobs).
      const ready = Date.now() + 30_000;
      while ((await connections()) < before + workers && Date.now() < ready) await sleep(POLL_MS);
      await sleep(500);

      log(`campaign send over ${workers} workers on postgres: sending…`);
      const started = performance.now();
      await runJson([ctx.emk, 'campaigns', 'send', prepared.campaignId, '--detach', '--json', '--db', url, '--workspace', prepared.workspaceId], ctx.env, ctx.root);
      const deadline = Date.now() + deadlineMs(contacts);
      let campaign: { status: string; started_at: string; sent_at: string | null; recipients: number };
      for (;;) {
        campaign = (await client.query('SELECT status, started_at, sent_at, recipients FROM campaigns WHERE id = $1', [prepared.campaignId])).rows[0];
        if (campaign.status === 'sent' || Date.now() > deadline) break;
        await sleep(POLL_MS);
      }
      const wallSeconds = (performance.now() - started) / 1000;
      if (campaign.status !== 'sent') failures.push(`campaign send over ${workers} workers: still ${campaign.status} after ${wallSeconds.toFixed(0)} s`);
      const peaks = children.map((child) => child.peakRssKib());
      const cpuSeconds = children.map((child) => child.cpuSeconds());
      await stopAll();

      const duplicates = Number(
        (
          await client.query(
            'SELECT count(*) AS n FROM (SELECT campaign_id, contact_id FROM messages WHERE campaign_id = $1 GROUP BY campaign_id, contact_id HAVING count(*) > 1) d',
            [prepared.campaignId],
          )
        ).rows[0].n,
      );
      const statuses = Object.fromEntries(
        (await client.query('SELECT status, count(*) AS n FROM messages WHERE campaign_id = $1 GROUP BY status ORDER BY status', [prepared.campaignId])).rows.map(
          (row: { status: string; n: string }) => [row.status, Number(row.n)],
        ),
      );
      const captured = statuses.captured ?? 0;
      const seconds = campaign.sent_at === null ? wallSeconds : (Number(campaign.sent_at) - Number(campaign.started_at)) / 1000;
      checkSend(`campaign send over ${workers} workers`, contacts, { recipients: Number(campaign.recipients), captured, failed: statuses.failed ?? 0 }, failures);
      if (duplicates > 0) failures.push(`campaign send over ${workers} workers: ${duplicates} contacts got more than one message`);
      const known = peaks.filter((peak): peak is number => peak !== null);
      return {
        database: 'postgres',
        workers,
        recipients: Number(campaign.recipients),
        seconds,
        wallSeconds,
        messagesPerSecond: captured / seconds,
        duplicates,
        statuses,
        peakRssKib: known.length > 0 ? Math.max(...known) : null,
        cpuSeconds,
      };
    });
  } finally {
    await stopAll();
  }
}

/**
 * Real signed tracking links: a small campaign sent (captured) in processes of its own, then its messages read
 * back through `GET /api/v1/messages` of a running server, and the `/t/c/…` and `/t/o/…` paths taken from their
 * HTML.
 */
export async function trackingPaths(url: string, messages: number, server: ServerProcess, ctx: CampaignBenchContext): Promise<{ click: string[]; open: string[] }> {
  const prepared = await prepareCampaignProcess(url, messages, ctx);
  await runMeasuredNode('campaign.js --send', [CAMPAIGN_SCRIPT, '--send', url, prepared.workspaceId, prepared.campaignId], ctx.env, ctx.root);
  const response = await fetch(`${server.url}/api/v1/messages?campaign_id=${prepared.campaignId}&perPage=${messages}`, {
    headers: { 'x-api-key': prepared.apiKey },
  });
  if (response.status !== 200) throw new Error(`GET /api/v1/messages answered ${response.status} ${await response.text()}`);
  const { data } = (await response.json()) as { data: Array<{ html: string | null }> };
  const click: string[] = [];
  const open: string[] = [];
  for (const { html } of data) {
    for (const [, href] of (html ?? '').matchAll(/(?:href|src)="([^"]+)"/g)) {
      const path = new URL(href!).pathname;
      if (path.startsWith('/t/c/')) click.push(path);
      else if (path.startsWith('/t/o/')) open.push(path);
    }
  }
  if (click.length === 0 || open.length === 0) throw new Error(`the captured messages held ${click.length} click and ${open.length} open links`);
  return { click, open };
}

// ---------------------------------------------------------------------------------------------------------
// Output

const mib = (kib: number | null) => (kib === null ? '-' : (kib / 1024).toFixed(0));
const meets = (met: boolean) => (met ? 'met' : 'not met');

/**
 * Issue 13's memory goal is the HTML send's. Issue 36 sets the MJML send a rate only: MJML's modules stay loaded
 * in the thread that compiled (about 120 MiB, docs/email.md, What it costs), so its row shows none.
 */
const rssVerdict = (row: CampaignRow) =>
  row.format === 'mjml' ? 'no RSS goal' : row.peakRssKib === null ? '?' : meets(row.peakRssKib * 1024 < GOAL_PEAK_RSS_BYTES);

export function campaignTable(rows: CampaignRow[]): [string[], string[][]] {
  return [
    ['campaign send (captured, 4-product best_selling block)', 'database', 'template', 'recipients', 'captured', 'total (s)', 'messages/s', 'peak RSS (MiB)', 'goal ≥ 2000/s, < 400 MB (HTML)'],
    rows.map((row) => [
      `1 process; recipients fixed in ${row.recipientsFixedSeconds.toFixed(2)} s`,
      row.database,
      row.format,
      String(row.recipients),
      String(row.captured),
      row.seconds.toFixed(1),
      row.messagesPerSecond.toFixed(0),
      mib(row.peakRssKib),
      `${meets(row.messagesPerSecond >= GOAL_MESSAGES_PER_SECOND)}, ${rssVerdict(row)}`,
    ]),
  ];
}

export function workersTable(rows: WorkersRow[]): [string[], string[][]] {
  return [
    ['campaign send over emk worker processes', 'database', 'recipients', 'total (s)', 'wall (s)', 'messages/s', 'duplicates', 'messages by status', 'CPU s per worker', 'peak RSS (MiB, max)'],
    rows.map((row) => [
      `${row.workers} x emk worker`,
      row.database,
      String(row.recipients),
      row.seconds.toFixed(1),
      row.wallSeconds.toFixed(1),
      row.messagesPerSecond.toFixed(0),
      String(row.duplicates),
      Object.entries(row.statuses)
        .map(([status, n]) => `${status} ${n}`)
        .join(', '),
      row.cpuSeconds.map((s) => (s === null ? '?' : s.toFixed(0))).join(' / '),
      mib(row.peakRssKib),
    ]),
  ];
}
