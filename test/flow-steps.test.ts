import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createServices, emailOptionsOf } from '../src/domain/create-services.js';
import { openDatabase } from '../src/domain/db/database.js';
import { startWorker, workerOptionsFor } from '../src/worker/worker.js';
import { eventually } from './helpers/browser.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

type Row = Record<string, any>;

/**
 * The receiving end of webhook steps: each flow's calls, answered from that flow's queue (then 200), each
 * signature verified. Keyed by flow, so a late retry of one test's call can never take another test's answer.
 */
const calls = new Map<string, Array<{ body: Row; valid: boolean; at: number; headers: http.IncomingHttpHeaders }>>();
const answers = new Map<string, Array<number | 'hang'>>();
const callsTo = (flowId: string) => calls.get(flowId) ?? [];
const answerNext = (flowId: string, answer: number | 'hang') => answers.set(flowId, [...(answers.get(flowId) ?? []), answer]);
const SECRET = 'test-secret-of-sixteen+';
const server = http.createServer((req, res) => {
  let raw = '';
  req.on('data', (c) => (raw += c));
  req.on('end', () => {
    const expected = `sha256=${createHmac('sha256', SECRET).update(raw).digest('hex')}`;
    const body = JSON.parse(raw);
    calls.set(body.flow_id, [...callsTo(body.flow_id), { body, valid: req.headers['x-emk-signature'] === expected, at: Date.now(), headers: req.headers }]);
    const answer = answers.get(body.flow_id)?.shift() ?? 200;
    if (answer === 'hang') return;
    res.writeHead(answer).end();
  });
});
let hookUrl = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  hookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

// The timeout is generous: on a loaded 2-core CI host this process's event loop (which also answers the calls)
// has stalled longer than 400 ms, failing a call that was answered.
const ENV = { EMK_WEBHOOK_ALLOW_HOSTS: '127.0.0.1', EMK_WEBHOOK_TIMEOUT_MS: '3000', EMK_WEBHOOK_RETRY_BASE_MS: '50' };

describeEachDatabase(
  'flow steps: branch, update_contact, webhook; browse_abandonment',
  (h) => {
    const { api, contact, work, messagesOf } = sendingHelpers(h);
    const knex = () => h().services.db.knex;
    const email = (subject: string) => ({ type: 'email', subject, html: `<p>${subject}</p>` });

    async function flow(ws: TestWorkspace, fields: Record<string, unknown>): Promise<string> {
      const reply = await api(ws, 'POST', '/flows', { name: 'Flow', status: 'live', trigger: { type: 'event', event_name: 'go' }, ...fields });
      if (reply.statusCode !== 201) throw new Error(reply.body);
      return reply.json().id;
    }
    const enrollments = async (ws: TestWorkspace, flowId: string): Promise<Row[]> => (await api(ws, 'GET', `/flows/${flowId}/enrollments?perPage=500`)).json().data;
    const attempts = async (ws: TestWorkspace, flowId: string): Promise<Row[]> => (await api(ws, 'GET', `/flows/${flowId}/webhook-attempts?perPage=500`)).json().data;
    const go = async (ws: TestWorkspace, contactId: string, name = 'go', properties: Row = {}) => {
      const reply = await api(ws, 'POST', '/events', { contact_id: contactId, event_name: name, properties });
      if (reply.statusCode >= 300) throw new Error(reply.body);
    };
    const subjectsOf = async (ws: TestWorkspace, flowId: string, contactId: string) =>
      (await messagesOf(ws, `flow_id=${flowId}&contact_id=${contactId}`)).map((m) => m.subject).sort();
    const running = (services = h().services) => startWorker(workerOptionsFor(services, { onFailure: () => {}, pollMs: 50 }));

    // ------------------------------------------------------------------ checks at save

    it('steps are checked at save, naming the nested place; nothing is stored on a 400', async () => {
      const ws = await h().workspace();
      const branch = (yes: unknown[] = [], extra: Row = {}) => ({ type: 'branch', conditions: { all: [{ property: 'country', operator: 'equals', value: 'DE' }] }, yes, no: [], ...extra });
      const deep = (n: number): Row => (n === 0 ? email('deep') : branch([deep(n - 1)]));
      const hooked = (headers: Row) => ({ type: 'webhook', url: 'https://hooks.example.com/', headers });
      const bad: Array<[unknown[], RegExp]> = [
        [[email('a'), branch([], { conditions: { all: [{ property: 'x', operator: 'sounds_like', value: 1 }] } })], /^invalid request: steps\[1\]\.conditions\.all\[0\]\.operator/],
        [[branch([branch([{ type: 'email', subject: 'S', html: '{% if %}' }])])], /^steps\[0\]\.yes\[0\]\.yes\[0\]\.html: /],
        [[branch([{ type: 'delay', minutes: -1 }])], /steps\[0\]\.yes\[0\]\.minutes/],
        [[branch([], { yes: 'nope' })], /steps\[0\]\.yes/],
        [[deep(6)], /steps\[0\](\.yes\[0\]){5} nests branches more than 5 deep/],
        [[branch(Array.from({ length: 50 }, () => email('x')), { no: Array.from({ length: 50 }, () => email('y')) })], /steps must have at most 100 steps in all/],
        [[{ type: 'update_contact' }], /steps\[0\] must set properties or subscription_status/],
        [[{ type: 'update_contact', subscription_status: 'maybe' }], /steps\[0\]\.subscription_status/],
        [[{ type: 'webhook' }], /steps\[0\]\.url/],
        [[{ type: 'webhook', url: 'ftp://hooks.example.com/' }], /^invalid request: steps\[0\]\.url must be an https:\/\/ URL/],
        [[{ type: 'webhook', url: 'http://hooks.example.com/' }], /steps\[0\]\.url must be an https:\/\/ URL \(http:\/\/ only to a host in EMK_WEBHOOK_ALLOW_HOSTS\)/],
        [[branch([{ type: 'webhook', url: 'https://169.254.169.254/latest/meta-data' }])], /steps\[0\]\.yes\[0\]\.url names a loopback, private or reserved address \(169\.254\.169\.254\)/],
        [[{ type: 'webhook', url: 'https://10.0.0.1/' }], /steps\[0\]\.url names a loopback/],
        [[{ type: 'webhook', url: 'https://localhost/' }], /steps\[0\]\.url names a loopback/],
        [[{ type: 'webhook', url: 'https://hooks.example.com/', secret: 'short' }], /steps\[0\]\.secret must be at least 16/],
        [[hooked({ 'Bad Name': 'x' })], /^invalid request: steps\[0\]\.headers\.Bad Name must be a header name/],
        [[hooked({ 'X-Emk-Signature': 'forged' })], /^invalid request: steps\[0\]\.headers\.X-Emk-Signature is set by emk, not by the step$/],
        [[hooked({ Host: 'elsewhere.example.com' })], /steps\[0\]\.headers\.Host is set by emk/],
        [[hooked({ 'X-Token': 'a\r\nX-Injected: 1' })], /^invalid request: steps\[0\]\.headers\.X-Token must hold no line break or control character$/],
        [[hooked({ 'X-Token': 'x'.repeat(1001) })], /steps\[0\]\.headers\.X-Token must be at most 1000 characters/],
        [[hooked({ 'X-Token': 7 })], /steps\[0\]\.headers\.X-Token must be a string/],
        [[hooked(Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`X-H${i}`, 'v'])))], /^invalid request: steps\[0\]\.headers must have at most 10 entries$/],
        [[hooked({ 'X-Token': 'a', 'x-token': 'b' })], /^invalid request: steps\[0\]\.headers must not name a header twice$/],
      ];
      for (const [steps, message] of bad) {
        const reply = await api(ws, 'POST', '/flows', { name: 'F', trigger: { type: 'order_placed' }, steps });
        expect(reply.statusCode, JSON.stringify(steps).slice(0, 200)).toBe(400);
        expect(reply.json().error, JSON.stringify(steps).slice(0, 200)).toMatch(message);
      }
      expect((await api(ws, 'GET', '/flows')).json().meta.total).toBe(0);
      // Five deep is allowed; a webhook without a secret gets one, kept in the record (sent back, it stays).
      const ok = await api(ws, 'POST', '/flows', { name: 'F', trigger: { type: 'order_placed' }, steps: [deep(5), { type: 'webhook', url: 'https://hooks.example.com/x' }] });
      expect(ok.statusCode).toBe(201);
      const secret = ok.json().steps[1].secret;
      expect(secret).toMatch(/^whsec_[0-9a-f]{48}$/);
      const again = await api(ws, 'PATCH', `/flows/${ok.json().id}`, { steps: ok.json().steps });
      expect(again.json().steps[1].secret).toBe(secret);
      const missing = await api(ws, 'GET', `/flows/${ok.json().id}/webhook-attempts`);
      expect(missing.json()).toMatchObject({ data: [], meta: { total: 0 } });
    });

    // ------------------------------------------------------------------ branch

    it('a branch checks its conditions when the enrolment reaches it; each path runs, then the steps after the branch', async () => {
      const ws = await h().workspace();
      const de = await contact(ws, 'subscribed', { country: 'DE' });
      const fr = await contact(ws, 'subscribed', { country: 'FR' });
      const id = await flow(ws, {
        steps: [
          { type: 'branch', conditions: { all: [{ property: 'country', operator: 'equals', value: 'DE' }] }, yes: [email('Hallo')], no: [email('Bonjour'), { type: 'delay', minutes: 60 }, email('Encore')] },
          email('Both'),
        ],
      });
      await go(ws, de);
      await go(ws, fr);
      await work();
      expect(await subjectsOf(ws, id, de)).toEqual(['Both', 'Hallo']);
      expect(await subjectsOf(ws, id, fr)).toEqual(['Bonjour']);
      const rows = await enrollments(ws, id);
      const byContact = new Map(rows.map((r) => [r.contact_id, r]));
      expect(byContact.get(de)).toMatchObject({ status: 'completed', current_step: 6, step_path: null });
      // Flattened: 0 branch, 1 yes.0, 2 no.0, 3 no.1 (delay), 4 no.2, 5 the step after the branch.
      expect(byContact.get(fr)).toMatchObject({ status: 'waiting', current_step: 4, step_path: '0.no.2' });
      const report = (await api(ws, 'GET', `/flows/${id}/report`)).json();
      expect(report).toMatchObject({ enrolled: 2, completed: 1, sent: 3 });
      // The wait ends: the no path goes on, then joins the steps after the branch.
      await knex()('flow_enrollments').where({ flow_id: id, status: 'waiting' }).update({ next_run_at: Date.now() - 1 });
      await knex()('jobs').where({ kind: 'flow.step' }).whereNull('failed_at').update({ run_at: Date.now() - 1 });
      await work();
      expect(await subjectsOf(ws, id, fr)).toEqual(['Bonjour', 'Both', 'Encore']);
      expect((await api(ws, 'GET', `/flows/${id}/report`)).json()).toMatchObject({ enrolled: 2, completed: 2, sent: 5 });
    });

    it('editing a live flow moves waiting enrolments to the same path in the new steps', async () => {
      const ws = await h().workspace();
      const who = await contact(ws, 'subscribed', { country: 'DE' });
      const yes = { all: [{ property: 'country', operator: 'equals', value: 'DE' }] };
      const before = [
        { type: 'branch', conditions: yes, yes: [email('A')], no: [] },
        { type: 'branch', conditions: yes, yes: [{ type: 'delay', minutes: 60 }, email('After the wait')], no: [] },
        email('Last'),
      ];
      const id = await flow(ws, { steps: before });
      await go(ws, who);
      await work();
      expect((await enrollments(ws, id))[0]).toMatchObject({ status: 'waiting', current_step: 4, step_path: '1.yes.1' });
      // A step more in the first branch: the waiting enrolment's step (1.yes.1) is now at position 5.
      const after = [{ ...before[0], yes: [email('A'), email('A2')] }, before[1], before[2]];
      expect((await api(ws, 'PATCH', `/flows/${id}`, { steps: after })).statusCode).toBe(200);
      expect((await enrollments(ws, id))[0]).toMatchObject({ status: 'waiting', current_step: 5, step_path: '1.yes.1' });
      await knex()('flow_enrollments').where({ flow_id: id }).update({ next_run_at: Date.now() - 1 });
      await knex()('jobs').where({ kind: 'flow.step' }).whereNull('failed_at').update({ run_at: Date.now() - 1 });
      await work();
      expect(await subjectsOf(ws, id, who)).toEqual(['A', 'After the wait', 'Last']);
      expect((await enrollments(ws, id))[0]).toMatchObject({ status: 'completed' });
    });

    // ------------------------------------------------------------------ update_contact

    it('update_contact merges properties and sets the status with a consent history entry; never resubscribes an unsubscribed contact', async () => {
      const ws = await h().workspace();
      const fresh = await contact(ws, 'non_subscribed', { tier: 'basic', keep: 1 });
      const gone = await contact(ws, 'unsubscribed', { tier: 'basic' });
      const id = await flow(ws, {
        message_type: 'transactional',
        steps: [{ type: 'update_contact', properties: { tier: 'vip', joined: true }, subscription_status: 'subscribed' }, email('Welcome')],
      });
      await go(ws, fresh);
      await go(ws, gone);
      await work();
      const a = (await api(ws, 'GET', `/contacts/${fresh}`)).json();
      expect(a).toMatchObject({ subscription_status: 'subscribed', properties: { tier: 'vip', joined: true, keep: 1 } });
      const history = (await api(ws, 'GET', `/contacts/${fresh}/consent`)).json().data;
      expect(history.at(-1)).toMatchObject({ status: 'subscribed', previous_status: 'non_subscribed', origin: `flow:${id}` });
      const b = (await api(ws, 'GET', `/contacts/${gone}`)).json();
      expect(b).toMatchObject({ subscription_status: 'unsubscribed', properties: { tier: 'vip', joined: true } });
      expect((await api(ws, 'GET', `/contacts/${gone}/consent`)).json().data.some((c: Row) => String(c.origin).startsWith('flow:'))).toBe(false);
      expect((await enrollments(ws, id)).map((e) => e.status)).toEqual(['completed', 'completed']);
      // Unsubscribing through a flow is recorded too.
      const out = await flow(ws, { trigger: { type: 'event', event_name: 'leave' }, steps: [{ type: 'update_contact', subscription_status: 'unsubscribed' }] });
      await go(ws, fresh, 'leave');
      await work();
      expect((await api(ws, 'GET', `/contacts/${fresh}/consent`)).json().data.at(-1)).toMatchObject({ status: 'unsubscribed', origin: `flow:${out}` });
    });

    // ------------------------------------------------------------------ webhook

    it('a webhook step posts the contact and trigger signed, records the attempt, and the flow goes on', async () => {
      const ws = await h().workspace();
      const who = await contact(ws, 'subscribed', { first_name: 'Ada' });
      const id = await flow(ws, { steps: [{ type: 'webhook', url: hookUrl, secret: SECRET, headers: { Authorization: 'Bearer partner-key', 'X-Shop': 'demo' } }, email('After the hook')] });
      await go(ws, who, 'go', { sku: 'A-1' });
      await work();
      const [enrollment] = await enrollments(ws, id);
      expect(enrollment, JSON.stringify(await attempts(ws, id))).toMatchObject({ status: 'completed' });
      expect(callsTo(id)).toHaveLength(1);
      expect(callsTo(id)[0]!.valid).toBe(true);
      expect(callsTo(id)[0]!.body).toMatchObject({
        flow_id: id,
        enrollment_id: enrollment!.id,
        contact: { id: who, properties: { first_name: 'Ada' }, subscription_status: 'subscribed' },
        trigger: { type: 'event', event: { name: 'go', properties: { sku: 'A-1' } } },
      });
      expect(Object.keys(callsTo(id)[0]!.body).sort()).toEqual(['contact', 'enrollment_id', 'flow_id', 'trigger']);
      // The step's headers, and the key a receiver deduplicates by (a retry carries the same one).
      expect(callsTo(id)[0]!.headers).toMatchObject({ authorization: 'Bearer partner-key', 'x-shop': 'demo', 'x-emk-idempotency-key': `${enrollment!.id}:0` });
      expect(await subjectsOf(ws, id, who)).toEqual(['After the hook']);
      const [attempt] = await attempts(ws, id);
      expect(attempt).toMatchObject({ enrollment_id: enrollment!.id, step: 0, attempt: 1, status_code: 200, error: null });
      expect(attempt!.duration_ms).toBeGreaterThanOrEqual(0);
    });

    it('a failed call is retried with back-off (a 500, then a 200); every attempt is recorded', async () => {
      const ws = await h().workspace();
      const who = await contact(ws, 'subscribed');
      const id = await flow(ws, { steps: [{ type: 'webhook', url: hookUrl, secret: SECRET }, email('Then')] });
      answerNext(id, 500);
      await go(ws, who);
      const worker = running();
      try {
        await eventually(() => enrollments(ws, id), (rows) => rows[0]?.status === 'completed');
      } finally {
        await worker.stop();
      }
      expect(callsTo(id).map((r) => r.valid)).toEqual([true, true]);
      expect(callsTo(id)[1]!.at - callsTo(id)[0]!.at).toBeGreaterThanOrEqual(900);
      // The retry is the same delivery: the same idempotency key.
      expect(new Set(callsTo(id).map((r) => r.headers['x-emk-idempotency-key']))).toEqual(new Set([`${(await enrollments(ws, id))[0]!.id}:0`]));
      const rows = await attempts(ws, id);
      expect(rows.map((a) => [a.attempt, a.status_code, a.error])).toEqual([
        [2, 200, null],
        [1, 500, 'HTTP 500'],
      ]);
      expect(await subjectsOf(ws, id, who)).toEqual(['Then']);
    });

    it('a restart between attempts: the retry happens once and the flow goes on once', async () => {
      const ws = await h().workspace();
      const who = await contact(ws, 'subscribed');
      const id = await flow(ws, { steps: [{ type: 'webhook', url: hookUrl, secret: SECRET }, email('Once')] });
      answerNext(id, 503);
      await go(ws, who);
      await work(); // the first attempt fails; its retry waits
      expect(callsTo(id)).toHaveLength(1);
      expect((await enrollments(ws, id))[0]).toMatchObject({ status: 'waiting', next_run_at: null, step_path: '0' });
      // Another process on the same database (this one's worker never runs again) picks the retry up.
      const second = createServices(openDatabase(h().database.url), { email: emailOptionsOf(h().config) });
      try {
        const worker = running(second);
        try {
          await eventually(() => enrollments(ws, id), (rows) => rows[0]?.status === 'completed');
        } finally {
          await worker.stop();
        }
      } finally {
        await second.close();
      }
      await work();
      expect(callsTo(id)).toHaveLength(2);
      expect((await attempts(ws, id)).map((a) => a.status_code)).toEqual([200, 503]);
      expect(await subjectsOf(ws, id, who)).toEqual(['Once']);
    });

    it('a call that gets no answer times out and is recorded; after the last attempt the flow goes on', async () => {
      const ws = await h().workspace();
      const who = await contact(ws, 'subscribed');
      const id = await flow(ws, { steps: [{ type: 'webhook', url: hookUrl, secret: SECRET }, email('Anyway')] });
      answerNext(id, 'hang');
      await go(ws, who);
      await work();
      const [first] = await attempts(ws, id);
      expect(first).toMatchObject({ attempt: 1, status_code: null, error: 'timed out after 3000 ms' });
      expect(first!.duration_ms).toBeGreaterThanOrEqual(2990);
      // The last attempt (the job's fifth) fails too: the enrolment goes on to its next step.
      answerNext(id, 500);
      await knex()('jobs').where({ kind: 'flow.webhook' }).whereNull('failed_at').update({ attempts: 4, run_at: Date.now() - 1 });
      await work();
      expect((await attempts(ws, id)).map((a) => [a.attempt, a.status_code])).toEqual([[5, 500], [1, null]]);
      expect((await enrollments(ws, id))[0]).toMatchObject({ status: 'completed' });
      expect(await subjectsOf(ws, id, who)).toEqual(['Anyway']);
    });

    it('a flow paused while its webhook call waits holds the enrolment at the step; live again, it calls again once', async () => {
      const ws = await h().workspace();
      const who = await contact(ws, 'subscribed');
      const id = await flow(ws, { steps: [{ type: 'webhook', url: hookUrl, secret: SECRET }, email('Resumed')] });
      answerNext(id, 500);
      await go(ws, who);
      // The first call fails; its retry waits. Worked until that call arrived (a barrier: once, a full CI-like run
      // saw no call after the first round), reporting the attempts if it never does.
      await eventually(async () => {
        await work();
        return { calls: callsTo(id).length, attempts: await attempts(ws, id) };
      }, (seen) => seen.calls === 1);
      expect((await enrollments(ws, id))[0]).toMatchObject({ status: 'waiting', next_run_at: null });
      expect((await api(ws, 'PATCH', `/flows/${id}`, { status: 'paused' })).statusCode).toBe(200);
      await knex()('jobs').where({ kind: 'flow.webhook' }).whereNull('failed_at').update({ run_at: Date.now() - 1 });
      await work(); // the retry finds the flow paused: no call, the enrolment is held at its step
      expect(callsTo(id)).toHaveLength(1);
      expect((await enrollments(ws, id))[0]).toMatchObject({ status: 'active', step_path: '0' });
      expect((await api(ws, 'PATCH', `/flows/${id}`, { status: 'live' })).statusCode).toBe(200);
      await work();
      expect(callsTo(id)).toHaveLength(2);
      expect((await enrollments(ws, id))[0]).toMatchObject({ status: 'completed' });
      expect(await subjectsOf(ws, id, who)).toEqual(['Resumed']);
      expect((await attempts(ws, id)).map((a) => [a.attempt, a.status_code])).toEqual([[1, 200], [1, 500]]);
    });

    // ------------------------------------------------------------------ browse_abandonment

    it('browse_abandonment enrols after the wait with the viewed products; repeated views enrol once', async () => {
      const ws = await h().workspace();
      const who = await contact(ws, 'subscribed');
      const id = await flow(ws, {
        trigger: { type: 'browse_abandonment', delay_minutes: 0.003 },
        steps: [{ type: 'email', subject: 'Still looking?', html: '{% for p in viewed_products %}[{{ p.title }}]{% endfor %} {{ event.properties.title }}' }],
      });
      expect((await api(ws, 'GET', `/flows/${id}`)).json().trigger).toEqual({ type: 'browse_abandonment', delay_minutes: 0.003 });
      await go(ws, who, 'product_viewed', { product_id: 'p1', title: 'Lamp' });
      await go(ws, who, 'viewed_product', { product_id: 'p2', title: 'Chair' });
      await go(ws, who, 'viewed_product', { product_id: 'p1', title: 'Lamp' });
      const worker = running();
      try {
        await eventually(() => enrollments(ws, id), (rows) => rows[0]?.status === 'completed');
        // Barrier: every wait was checked.
        await eventually(() => h().services.jobs.pendingCount(['flow.browse_check']), (n) => n === 0);
      } finally {
        await worker.stop();
      }
      expect(await enrollments(ws, id)).toHaveLength(1);
      const [message] = await messagesOf(ws, `flow_id=${id}`);
      expect(message!.html).toContain('[Lamp][Chair] Lamp');
    });

    it('browse_abandonment: an add-to-cart or an order within the wait means no enrolment', async () => {
      const ws = await h().workspace();
      const carts = await contact(ws, 'subscribed');
      const buys = await contact(ws, 'subscribed');
      const id = await flow(ws, { trigger: { type: 'browse_abandonment', delay_minutes: 0.002 }, steps: [email('x')] });
      await go(ws, carts, 'viewed_product', { product_id: 'p1' });
      await go(ws, carts, 'added_to_cart', { product_id: 'p1' });
      await go(ws, buys, 'viewed_product', { product_id: 'p2' });
      const order = await api(ws, 'POST', '/ecommerce/orders', { contact_id: buys, platform: 'pos', order_number: 'B-1', total_amount: 5, currency: 'EUR', status: 'paid', ordered_at: new Date().toISOString() });
      expect(order.statusCode).toBe(201);
      const worker = running();
      try {
        await eventually(() => h().services.jobs.pendingCount(['flow.browse_check']), (n) => n === 0);
      } finally {
        await worker.stop();
      }
      expect(await enrollments(ws, id)).toEqual([]);
    });
  },
  ENV,
);
