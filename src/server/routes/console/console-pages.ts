import type { CampaignView, ConsoleOverview, FlowView } from '../../../domain/console/console-service.js';
import type { Campaign } from '../../../domain/campaigns/campaign.schema.js';
import type { Flow, FlowReport, FlowStep } from '../../../domain/flows/flow.schema.js';
import type { MessageRecord } from '../../../domain/messages/message.schema.js';
import type { Segment } from '../../../domain/segments/segment.schema.js';
import type { Page } from '../../../domain/shared/paging.js';
import type { SendReport } from '../../../domain/shared/send-report.js';
import { chartSvg } from './chart.js';
import { html, SafeHtml } from './html.js';

/** Who is looking: shown in the header. */
export interface Viewer {
  email: string;
  workspaceName: string;
}

const STYLE = `*{box-sizing:border-box}body{font:15px/1.45 system-ui,-apple-system,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
header{background:#1f2328;color:#fff;padding:.6rem 1rem;display:flex;flex-wrap:wrap;gap:.4rem 1rem;align-items:center}
header a{color:#fff;text-decoration:none}header strong{margin-right:auto}header form{margin:0}
nav{display:flex;flex-wrap:wrap;gap:.2rem .9rem;padding:.5rem 1rem;background:#fff;border-bottom:1px solid #d0d7de}
nav a{color:#0969da;text-decoration:none}nav a[aria-current]{font-weight:600;color:#1f2328}
main{max-width:64rem;margin:0 auto;padding:1rem}h1{font-size:1.35rem;margin:.2rem 0 1rem}h2{font-size:1.1rem;margin:1.4rem 0 .6rem}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(9.5rem,1fr));gap:.6rem}
.card{background:#fff;border:1px solid #d0d7de;border-radius:.4rem;padding:.6rem .8rem}.card b{display:block;font-size:1.3rem}
.card small{color:#57606a}.scroll{overflow-x:auto;background:#fff;border:1px solid #d0d7de;border-radius:.4rem}
table{border-collapse:collapse;width:100%}th,td{padding:.4rem .6rem;text-align:left;border-bottom:1px solid #eaeef2;white-space:nowrap}
td.num,th.num{text-align:right}tr:last-child td{border-bottom:0}a{color:#0969da}
.chart{margin:0;background:#fff;border:1px solid #d0d7de;border-radius:.4rem;padding:.5rem}.chart svg{width:100%;height:auto;display:block}
.key{margin-right:1rem;font-size:.85rem}.key i{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:-.1rem}
iframe{width:100%;height:32rem;border:1px solid #d0d7de;border-radius:.4rem;background:#fff}
button{font:inherit;padding:.35rem .8rem;border:0;border-radius:.3rem;background:#0969da;color:#fff;cursor:pointer}
header button{background:#444c56}.muted{color:#57606a}.pages{margin:.6rem 0;display:flex;gap:1rem}
form.sign-in{background:#fff;border:1px solid #d0d7de;border-radius:.4rem;padding:1rem;max-width:22rem}
form.sign-in label{display:block;margin:.6rem 0}form.sign-in input{display:block;width:100%;font:inherit;padding:.4rem;margin-top:.2rem}
.error{color:#cf222e}dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dd{margin:0;overflow-wrap:anywhere}`;

export function document(title: string, body: SafeHtml): string {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${title} · emk</title><style>${new SafeHtml(STYLE)}</style></head>
<body>${body}</body></html>`.value;
}

const NAV = [
  ['/console', 'Overview'],
  ['/console/campaigns', 'Campaigns'],
  ['/console/flows', 'Flows'],
  ['/console/segments', 'Segments'],
  ['/console/messages', 'Messages'],
] as const;

function layout(viewer: Viewer, section: string, title: string, body: SafeHtml): string {
  return document(
    title,
    html`<header><strong><a href="/console">emk</a> · ${viewer.workspaceName}</strong><span>${viewer.email}</span>
<form method="post" action="/console/sign-out"><button type="submit">Sign out</button></form></header>
<nav>${NAV.map(([href, label]) => html`<a href="${href}"${section === href ? html` aria-current="page"` : ''}>${label}</a>`)}</nav>
<main><h1>${title}</h1>${body}</main>`,
  );
}

const numberFormat = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });

/** A number as people read it; the exact value in `data-value` for scripts and tests, named by `data-metric`. */
const metric = (name: string, value: number) => html`<span data-metric="${name}" data-value="${value}">${numberFormat.format(value)}</span>`;

const card = (name: string, label: string, value: number, note = '') =>
  html`<div class="card"><small>${label}</small><b>${metric(name, value)}</b>${note ? html`<small>${note}</small>` : ''}</div>`;

const when = (iso: string | null) => (iso ? iso.replace('T', ' ').slice(0, 16) : '—');

/** Previous / next links of a paged list. */
function pager(path: string, meta: Page<unknown>['meta']): SafeHtml {
  const last = Math.max(1, Math.ceil(meta.total / meta.perPage));
  const to = (n: number) => `${path}${path.includes('?') ? '&' : '?'}page=${n}`;
  return html`<p class="pages muted">${meta.total} in all · page ${meta.page} of ${last}
${meta.page > 1 ? html`<a href="${to(meta.page - 1)}">← newer</a>` : ''}${meta.page < last ? html`<a href="${to(meta.page + 1)}">older →</a>` : ''}</p>`;
}

const table = (head: SafeHtml, rows: SafeHtml[], empty: string) =>
  rows.length === 0 ? html`<p class="muted">${empty}</p>` : html`<div class="scroll"><table><thead>${head}</thead><tbody>${rows}</tbody></table></div>`;

export function overviewPage(viewer: Viewer, o: ConsoleOverview): string {
  const revenue =
    o.revenue.length === 0
      ? [card('revenue', 'Attributed revenue, 30 days', 0)]
      : o.revenue.map((r) => html`<div class="card" data-currency="${r.currency}"><small>Attributed revenue, 30 days (${r.currency})</small><b>${metric('revenue', r.revenue)}</b><small>${metric('attributed_orders', r.orders)} ${r.orders === 1 ? 'order' : 'orders'}</small></div>`);
  // Every order's revenue, those without a contact (a point-of-sale sale) included.
  const sales = o.sales.map((r) => html`<div class="card" data-currency="${r.currency}"><small>Sales, 30 days (${r.currency})</small><b>${metric('sales', r.revenue)}</b><small>${metric('sales_orders', r.orders)} ${r.orders === 1 ? 'order' : 'orders'}</small></div>`);
  return layout(
    viewer,
    '/console',
    'Overview',
    html`<div class="cards">
${card('contacts', 'Contacts', o.contacts)}${card('subscribed', 'Subscribed', o.subscribed)}
${card('events_today', 'Events today', o.events.today)}${card('events_30d', 'Events, 30 days', o.events.days30)}
${card('orders_today', 'Orders today', o.orders.today)}${card('orders_30d', 'Orders, 30 days', o.orders.days30)}
${sales}${revenue}</div>
<h2>Server queues</h2><div class="cards">
${card('jobs_ready', 'Jobs waiting', o.jobs.ready)}${card('jobs_running', 'Jobs running', o.jobs.running)}${card('jobs_failed', 'Jobs failed', o.jobs.failed)}
${card('outbox_pending', 'Outbox facts waiting', o.outbox.pending)}${card('outbox_lag_seconds', 'Outbox lag (s)', Math.round(o.outbox.lag_seconds))}</div>
<p class="muted">Today counts from 00:00 UTC. Queues are the server's (every workspace's).</p>`,
  );
}

const REPORT_HEAD = html`<th class="num">Sent</th><th class="num">Opens</th><th class="num">Clicks</th><th class="num">Orders</th><th class="num">Revenue</th>`;
const reportCells = (r: Pick<SendReport, 'sent' | 'opens' | 'clicks' | 'orders' | 'revenue'>) =>
  html`<td class="num">${metric('sent', r.sent)}</td><td class="num">${metric('opens', r.opens)}</td><td class="num">${metric('clicks', r.clicks)}</td><td class="num">${metric('orders', r.orders)}</td><td class="num">${metric('revenue', r.revenue)}</td>`;

export function campaignsPage(viewer: Viewer, page: Page<{ record: Campaign; report: SendReport }>): string {
  const rows = page.data.map(
    ({ record, report }) =>
      html`<tr data-campaign="${record.id}"><td><a href="/console/campaigns/${record.id}">${record.name}</a></td><td>${record.status}</td><td>${when(record.sent_at)}</td>${reportCells(report)}</tr>`,
  );
  return layout(
    viewer,
    '/console/campaigns',
    'Campaigns',
    html`${table(html`<tr><th>Name</th><th>Status</th><th>Sent at</th>${REPORT_HEAD}</tr>`, rows, 'No campaigns yet.')}${pager('/console/campaigns', page.meta)}`,
  );
}

/** The full report of a campaign or flow: its numbers as cards. */
function reportCards(r: SendReport | FlowReport): SafeHtml {
  return html`<div class="cards">${card('sent', 'Sent', r.sent)}${card('delivered', 'Delivered', r.delivered)}${card('opens', 'Opens', r.opens, `${r.unique_opens} unique`)}
${card('clicks', 'Clicks', r.clicks, `${r.unique_clicks} unique`)}${card('orders', 'Orders', r.orders)}${card('revenue', 'Revenue', r.revenue)}
${card('bounced', 'Bounced', r.bounced)}${card('unsubscribed', 'Unsubscribed', r.unsubscribed)}${card('failed', 'Failed', r.failed)}${card('skipped', 'Skipped', r.skipped)}</div>`;
}

export function campaignPage(viewer: Viewer, view: CampaignView): string {
  const c = view.campaign;
  return layout(
    viewer,
    '/console/campaigns',
    c.name,
    html`<dl><dt>Status</dt><dd>${c.status}</dd><dt>Subject</dt><dd>${c.subject}</dd><dt>Sent at</dt><dd>${when(c.sent_at)}</dd>
<dt>Recipients</dt><dd>${c.recipients ?? '—'}</dd></dl>
<h2>Report</h2>${reportCards(view.report)}
<h2>Last 30 days</h2>${chartSvg(view.chart)}
<p><a href="/console/messages?campaign=${c.id}">Its messages</a></p>`,
  );
}

export function flowsPage(viewer: Viewer, page: Page<{ record: Flow; report: FlowReport }>): string {
  const rows = page.data.map(
    ({ record, report }) =>
      html`<tr data-flow="${record.id}"><td><a href="/console/flows/${record.id}">${record.name}</a></td><td>${record.status}</td><td>${record.trigger.type}</td><td class="num">${metric('enrolled', report.enrolled)}</td>${reportCells(report)}</tr>`,
  );
  return layout(
    viewer,
    '/console/flows',
    'Flows',
    html`${table(html`<tr><th>Name</th><th>Status</th><th>Trigger</th><th class="num">Enrolled</th>${REPORT_HEAD}</tr>`, rows, 'No flows yet.')}${pager('/console/flows', page.meta)}`,
  );
}

function describeStep(step: FlowStep): string {
  switch (step.type) {
    case 'delay':
      return `Wait ${step.minutes} minutes`;
    case 'email':
      return `Email: ${step.subject}`;
    case 'branch':
      return 'Branch: yes if the conditions match, else no';
    case 'update_contact':
      return 'Update the contact';
    case 'webhook':
      return `Webhook: ${step.url}`;
  }
}

export function flowPage(viewer: Viewer, view: FlowView): string {
  const f = view.flow;
  const steps = view.steps.map(
    ({ index, path, step, waiting }) => html`<tr data-step="${index}"><td>${path.split('.').map((part) => (/^\d+$/.test(part) ? String(Number(part) + 1) : part)).join('.')}</td><td>${describeStep(step)}</td><td class="num">${metric('waiting', waiting)}</td></tr>`,
  );
  return layout(
    viewer,
    '/console/flows',
    f.name,
    html`<dl><dt>Status</dt><dd>${f.status}</dd><dt>Trigger</dt><dd>${f.trigger.type}</dd><dt>Re-entry</dt><dd>${f.reentry}</dd></dl>
<h2>Steps</h2>${table(html`<tr><th>#</th><th>Step</th><th class="num">Enrolments waiting</th></tr>`, steps, 'This flow has no steps.')}
<h2>Report</h2><div class="cards">${card('enrolled', 'Enrolled', view.report.enrolled)}${card('completed', 'Completed', view.report.completed)}${card('exited', 'Exited', view.report.exited)}</div>
${reportCards(view.report)}
<h2>Last 30 days</h2>${chartSvg(view.chart)}
<p><a href="/console/messages?flow=${f.id}">Its messages</a></p>`,
  );
}

export function segmentsPage(viewer: Viewer, page: Page<Segment>): string {
  const rows = page.data.map(
    (s) => html`<tr data-segment="${s.id}"><td>${s.name}</td><td class="num">${metric('member_count', s.member_count)}</td><td>${when(s.updated_at)}</td></tr>`,
  );
  return layout(
    viewer,
    '/console/segments',
    'Segments',
    html`${table(html`<tr><th>Name</th><th class="num">Members</th><th>Updated</th></tr>`, rows, 'No segments yet.')}${pager('/console/segments', page.meta)}`,
  );
}

export function messagesPage(viewer: Viewer, page: Page<MessageRecord>, path: string): string {
  const rows = page.data.map(
    (m) =>
      html`<tr data-message="${m.id}"><td><a href="/console/messages/${m.id}">${m.subject ?? '(no subject)'}</a></td><td>${m.to}</td><td>${m.status}</td><td>${when(m.sent_at ?? m.created_at)}</td><td>${m.opened_at ? 'opened' : ''}${m.clicked_at ? ', clicked' : ''}</td></tr>`,
  );
  return layout(
    viewer,
    '/console/messages',
    'Recent messages',
    html`${table(html`<tr><th>Subject</th><th>To</th><th>Status</th><th>When</th><th>Engagement</th></tr>`, rows, 'No messages yet.')}${pager(path, page.meta)}`,
  );
}

/**
 * A message as its recipient saw it, in a sandboxed frame: `sandbox` without `allow-scripts` or
 * `allow-same-origin` (no script runs, the frame cannot read the console), and the page's policy allows no remote
 * image (the open pixel is not fetched, so looking at a message records no open).
 */
export function messagePage(viewer: Viewer, m: MessageRecord): string {
  return layout(
    viewer,
    '/console/messages',
    m.subject ?? '(no subject)',
    html`<dl><dt>To</dt><dd>${m.to}</dd><dt>Status</dt><dd>${m.status}</dd><dt>Sent</dt><dd>${when(m.sent_at)}</dd>
<dt>Opened</dt><dd>${when(m.opened_at)}</dd><dt>Clicked</dt><dd>${when(m.clicked_at)}</dd>
${m.campaign_id ? html`<dt>Campaign</dt><dd><a href="/console/campaigns/${m.campaign_id}">${m.campaign_id}</a></dd>` : ''}
${m.flow_id ? html`<dt>Flow</dt><dd><a href="/console/flows/${m.flow_id}">${m.flow_id}</a></dd>` : ''}</dl>
${m.html === null ? html`<p class="muted">This message has no HTML part.</p><pre>${m.text ?? ''}</pre>` : html`<iframe title="The message as sent" sandbox srcdoc="${m.html}"></iframe>`}
<p class="muted">Remote images are not loaded here: fetching the open pixel would record an open.</p>`,
  );
}

export function signInPage(message: { error: string } | null, email = ''): string {
  return document(
    'Sign in',
    html`<main><h1>Sign in to the emk console</h1>
<form class="sign-in" method="post" action="/console/sign-in">
${message ? html`<p class="error" role="alert">${message.error}</p>` : ''}
<label>Email<input type="email" name="email" autocomplete="username" required value="${email}"></label>
<label>Password<input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button></form>
<p class="muted">No password yet? <code>npx emk users set-password --email you@example.com</code> sets one (docs/console.md).</p></main>`,
  );
}

export function errorPage(status: number, message: string): string {
  return document(`${status}`, html`<main><h1>${status === 404 ? 'Not found' : 'Something is wrong'}</h1><p>${message}</p><p><a href="/console">Back to the console</a></p></main>`);
}

export function landingPage({ hasWorkspace }: { hasWorkspace: boolean }): string {
  const next = hasWorkspace
    ? html`<p>This database has a workspace. Sign in to the <a href="/console">console</a> with a user's email and password; no user yet?
<code>npx emk users add --email you@example.com --role owner</code>, then <code>npx emk users set-password --email you@example.com</code>.</p>`
    : html`<p>This database is empty. Start with one of:</p>
<pre>npx emk seed                                   # a demo shop with data (prints a console login)
npx emk init --name "My shop" --domain shop.example.com</pre>`;
  return document(
    'emk',
    html`<main><h1>emk</h1><p>A customer-data and email-marketing server: contacts, events and orders from your shop, segments, campaigns, flows and
attributed revenue.</p>${next}
<ul><li><a href="/console">The console</a>: the workspace at a glance, read-only, for a signed-in user</li>
<li><a href="/docs">The API documentation</a> (<a href="/openapi.json">OpenAPI</a>)</li>
<li><a href="/healthz">Health</a></li></ul></main>`,
  );
}
