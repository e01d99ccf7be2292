import { expect, it } from 'vitest';
import { loadConfig } from '../src/domain/config.js';
import { describeEachDatabase } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

/**
 * Issue 32, points 2 and 8a: no template can stall the server (renders run on threads, each part within a
 * deadline and an output cap; a template that cannot render is a 400 at save and at preview, and fails its own
 * message alone at send), and only the HTML part is HTML-escaped.
 */

/** Never in an error: a limit's message names the field and the limit, not the template. */
const MARKER = 'SECRET-TEMPLATE-TEXT';

/** Runs past any deadline without allocating: nine million empty iterations. */
const SLOW = `${MARKER}{% for i in (1..3000) %}{% for j in (1..3000) %}{% endfor %}{% endfor %}`;
/** Two MB of output from a small template. */
const HUGE = `${MARKER}{% for i in (1..2000) %}${'y'.repeat(1000)}{% endfor %}`;
/** Fine for the sample recipient of the check at save; runs past the deadline for a contact whose `n` is 3000. */
const SLOW_FOR_N = `${MARKER}{% for i in (1..contact.n) %}{% for j in (1..contact.n) %}{% endfor %}{% endfor %}`;
/** Fine for the sample recipient; 3 MB of output for a contact whose `n` is 3000. */
const HUGE_FOR_N = `${MARKER}{% for i in (1..contact.n) %}${'z'.repeat(1000)}{% endfor %}`;

describeEachDatabase('template limits (defaults: 1000 ms, 1048576 bytes)', (h) => {
  const { api, contact, campaign, work, messagesOf } = sendingHelpers(h);

  it('at save, a template that fails to parse or cannot render within the limits is a 400 naming the field and the limit', async () => {
    const ws = await h().workspace();
    const doubled = `{% assign s = "x" %}${'{% assign s = s | append: s %}'.repeat(25)}{{ s }}`;
    const refused: Array<[Record<string, unknown>, RegExp]> = [
      [{ html: SLOW }, /^html: template took longer than 1000 ms to render$/],
      [{ subject: HUGE }, /^subject: template output exceeds 1048576 bytes$/],
      [{ text: HUGE }, /^text: template output exceeds 1048576 bytes$/],
      [{ html: '{{ "x" | append: }}' }, /^html: append expect 2 arguments/],
      [{ html: '{% for i in (1..100000000) %}x{% endfor %}' }, /^html: template needs more than 10000000 characters or items of memory to render$/],
      [{ html: doubled }, /^html: template needs more than 10000000 characters or items of memory to render$/],
      // Parsing is quadratic in the number of tags: it runs on a thread, under the same deadline.
      [{ html: '{{ x }}'.repeat(149_000) }, /^html: template took longer than 1000 ms to parse$/],
    ];
    for (const [fields, message] of refused) {
      const reply = await api(ws, 'POST', '/campaigns', { name: 'N', subject: 'S', html: '<p>x</p>', ...fields });
      const what = Object.keys(fields).join();
      expect(reply.statusCode, what).toBe(400);
      expect(reply.json().error, what).toMatch(message);
      expect(reply.body, what).not.toContain(MARKER);
    }
    expect((await api(ws, 'GET', '/campaigns')).json().meta.total).toBe(0);

    const id = await campaign(ws);
    const patched = await api(ws, 'PATCH', `/campaigns/${id}`, { html: SLOW });
    expect(patched.statusCode).toBe(400);
    expect(patched.json().error).toBe('html: template took longer than 1000 ms to render');
    expect((await api(ws, 'GET', `/campaigns/${id}`)).json().html).toBe('<p>Hello {{ contact.first_name }}</p>');

    const flow = await api(ws, 'POST', '/flows', {
      name: 'F',
      status: 'live',
      trigger: { type: 'event', event_name: 'e' },
      steps: [{ type: 'email', subject: 'S', html: 'x' }, { type: 'email', subject: 'S', html: 'x', text: HUGE }],
    });
    expect(flow.statusCode).toBe(400);
    expect(flow.json().error).toBe('steps[1].text: template output exceeds 1048576 bytes');
  });

  it('a runaway preview is a 400 naming the limit, and /healthz answers within 50 ms while it runs', async () => {
    const ws = await h().workspace();
    const slow = await contact(ws, 'subscribed', { n: 3000 });
    const id = await campaign(ws, { html: SLOW_FOR_N });
    // Warm: the first render starts the threads.
    expect((await api(ws, 'POST', `/campaigns/${id}/preview`, { contact_id: await contact(ws, 'subscribed') })).statusCode).toBe(200);

    // Over a real socket: a render on the event loop holds every connection's answer for as long as it runs.
    const base = await h().app.listen({ port: 0, host: '127.0.0.1' });
    await (await fetch(`${base}/healthz`)).arrayBuffer();
    const started = performance.now();
    let done = false;
    const preview = fetch(`${base}/api/v1/campaigns/${id}/preview`, {
      method: 'POST',
      headers: { 'x-api-key': ws.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ contact_id: slow }),
    }).finally(() => void (done = true));
    const waits: number[] = [];
    // Until the preview answers (after at least the 1000 ms deadline), /healthz is asked again and again, back to back.
    while (!done && waits.length < 20_000) {
      const asked = performance.now();
      const health = await fetch(`${base}/healthz`);
      await health.arrayBuffer();
      waits.push(performance.now() - asked);
      expect(health.status).toBe(200);
    }
    const reply = await preview;
    // Within 50 ms; on a host loaded by others (2 cores, load average 10) one answer in a few hundred can take
    // longer for want of a core, so every answer is held to 200 ms and 95 in 100 to 50 ms. A render on the event
    // loop holds an answer for the whole render (today's main: 6.9 s here).
    const sorted = [...waits].sort((a, b) => b - a);
    const slowest = `slowest waits (ms) of ${waits.length}: ${sorted.slice(0, 5).map(Math.round).join(' ')}`;
    expect(sorted[0], slowest).toBeLessThan(200);
    expect(sorted[Math.floor(waits.length / 20)], slowest).toBeLessThan(50);
    expect(performance.now() - started).toBeGreaterThanOrEqual(1000);
    expect(waits.length).toBeGreaterThan(10);
    const body = await reply.text();
    expect(reply.status).toBe(400);
    expect(JSON.parse(body).error).toBe('html: template took longer than 1000 ms to render');
    expect(body).not.toContain(MARKER);
  });

  it('at send, a message past a limit fails alone, its error naming the part and the limit; the rest of the batch is delivered', async () => {
    const ws = await h().workspace();
    const slow = await contact(ws, 'subscribed', { n: 3000, first_name: 'Slow' });
    const huge = await contact(ws, 'subscribed', { m: 3000, first_name: 'Huge' });
    const fine = await contact(ws, 'subscribed', { first_name: 'Fine' });
    const id = await campaign(ws, {
      subject: `Hi {{ contact.first_name }}{% for i in (1..contact.m) %}${'z'.repeat(1000)}{% endfor %}`,
      html: `<p>Hello {{ contact.first_name }}</p>${SLOW_FOR_N}`,
    });
    expect((await api(ws, 'POST', `/campaigns/${id}/send`, {})).statusCode).toBe(202);
    await work();
    const byContact = new Map((await messagesOf(ws, `campaign_id=${id}`)).map((m) => [m.contact_id, m]));
    expect(byContact.get(slow)).toMatchObject({ status: 'failed', error: 'render failed: html: template took longer than 1000 ms to render' });
    expect(byContact.get(huge)).toMatchObject({ status: 'failed', error: 'render failed: subject: template output exceeds 1048576 bytes' });
    expect(byContact.get(fine)).toMatchObject({ status: 'captured', subject: 'Hi Fine' });
    expect(byContact.get(fine)!.html).toContain('<p>Hello Fine</p>');
    expect((await api(ws, 'GET', `/campaigns/${id}`)).json().status).toBe('sent');
  });

  it('only the HTML part is escaped: a contact named Tom & Jerry gets the subject "Hi Tom & Jerry"', async () => {
    const ws = await h().workspace();
    const tom = await contact(ws, 'subscribed', { first_name: 'Tom & Jerry' });
    const id = await campaign(ws, {
      subject: 'Hi {{ contact.first_name }}',
      html: '<p>Hi {{ contact.first_name }}</p>',
      text: 'Hi {{ contact.first_name }} <{{ unsubscribe_url }}>',
    });
    const preview = (await api(ws, 'POST', `/campaigns/${id}/preview`, { contact_id: tom })).json();
    expect(preview.subject).toBe('Hi Tom & Jerry');
    expect(preview.html).toContain('<p>Hi Tom &amp; Jerry</p>');
    expect(preview.text).toMatch(/^Hi Tom & Jerry <http:\/\/localhost:\d+\/cp\/unsubscribe\/[A-Za-z0-9_-]+>$/);

    expect((await api(ws, 'POST', `/campaigns/${id}/send`, {})).statusCode).toBe(202);
    await work();
    const [message] = await messagesOf(ws, `campaign_id=${id}`);
    expect(message).toMatchObject({ status: 'captured', subject: 'Hi Tom & Jerry' });
    expect(message!.html).toContain('<p>Hi Tom &amp; Jerry</p>');
    expect(message!.text).toMatch(/^Hi Tom & Jerry </);
  });
});

describeEachDatabase(
  'template limits from the configuration (EMK_TEMPLATE_TIMEOUT_MS=300, EMK_TEMPLATE_MAX_BYTES=4096)',
  (h) => {
    const { api, contact, campaign } = sendingHelpers(h);

    it('the deadline and the output cap come from the configuration, at save and at preview', async () => {
      const ws = await h().workspace();
      const save = async (html: string) => (await api(ws, 'POST', '/campaigns', { name: 'N', subject: 'S', html })).json().error;
      expect(await save(SLOW)).toBe('html: template took longer than 300 ms to render');
      expect(await save(`{% for i in (1..5) %}${'y'.repeat(1000)}{% endfor %}`)).toBe('html: template output exceeds 4096 bytes');
      expect(await save(`{% for i in (1..4) %}${'y'.repeat(1000)}{% endfor %}`)).toBeUndefined();

      const id = await campaign(ws, { html: HUGE_FOR_N });
      const reply = await api(ws, 'POST', `/campaigns/${id}/preview`, { contact_id: await contact(ws, 'subscribed', { n: 3000 }) });
      expect(reply.statusCode).toBe(400);
      expect(reply.json().error).toBe('html: template output exceeds 4096 bytes');
    });
  },
  { EMK_TEMPLATE_TIMEOUT_MS: '300', EMK_TEMPLATE_MAX_BYTES: '4096' },
);

it('the two settings are checked: a bad value names the setting', () => {
  expect(loadConfig({})).toMatchObject({ templateTimeoutMs: 1000, templateMaxBytes: 1_048_576 });
  expect(() => loadConfig({ EMK_TEMPLATE_TIMEOUT_MS: 'soon' })).toThrow(/EMK_TEMPLATE_TIMEOUT_MS/);
  expect(() => loadConfig({ EMK_TEMPLATE_MAX_BYTES: '0' })).toThrow(/EMK_TEMPLATE_MAX_BYTES/);
});
