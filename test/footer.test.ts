import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { afterAll, expect, it } from 'vitest';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

/** The footer of marketing mail (docs/email.md, Deliverability: Footer). */
describeEachDatabase('marketing footer', (h) => {
  const { api, contact, campaign, work, messagesOf } = sendingHelpers(h);

  /** The message's own unsubscribe URL: the one its List-Unsubscribe header carries. */
  const unsubscribeUrlOf = async (ws: TestWorkspace, contactId: string, messageId: string) =>
    (await h().services.tracking.signerFor(ws.id)).consentUrls(contactId, messageId);

  /** A captured campaign message to a new subscriber (earlier subscribers of the workspace get one too). */
  async function send(ws: TestWorkspace, fields: Record<string, unknown>) {
    const contactId = await contact(ws, 'subscribed', { first_name: 'Ada' });
    const campaignId = await campaign(ws, fields);
    expect((await api(ws, 'POST', `/campaigns/${campaignId}/send`)).statusCode).toBe(202);
    await work();
    const [message] = await messagesOf(ws, `campaign_id=${campaignId}&contact_id=${contactId}`);
    expect(message!.status).toBe('captured');
    return { contactId, message: message!, ...(await unsubscribeUrlOf(ws, contactId, message!.id)) };
  }

  const countOf = (haystack: string, needle: string) => haystack.split(needle).length - 1;

  it('a marketing template without the link gets the default footer, before </body>, with a working unsubscribe link', async () => {
    const ws = await h().workspace('Footer shop');
    const { contactId, message, unsubscribe_url, preferences_url } = await send(ws, {
      html: '<html><body><p>Hello {{ contact.first_name }}</p></body></html>',
    });
    expect(unsubscribe_url).toContain('/cp/unsubscribe/');
    const html = message.html as string;
    expect(countOf(html, `href="${unsubscribe_url}"`)).toBe(1);
    expect(html).toContain(`href="${preferences_url}"`);
    expect(html).toContain('Footer shop');
    expect(html).toMatch(/Manage preferences<\/a><\/p>\n<img[^>]+\/t\/o\/[^>]+><\/body><\/html>$/);
    expect(html.indexOf('Hello Ada')).toBeLessThan(html.indexOf(unsubscribe_url));
    // No text template: the text part is derived from the HTML, footer included.
    expect(message.text).toContain(unsubscribe_url);
    expect(message.text).toContain('Unsubscribe');

    const path = new URL(unsubscribe_url).pathname;
    expect((await h().request({ method: 'POST', url: path, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: '' })).statusCode).toBe(200);
    expect((await api(ws, 'GET', `/contacts/${contactId}`)).json().subscription_status).toBe('unsubscribed');
  });

  it('a body without </body> gets the footer appended; a text template that lacks the link gets the text footer after a blank line', async () => {
    const ws = await h().workspace('Plain shop');
    const { message, unsubscribe_url, preferences_url } = await send(ws, { html: '<p>Hi</p>', text: 'Hi {{ contact.first_name }}\n\n' });
    expect(message.html).toContain(`<p>Hi</p>\n<p style=`);
    expect(message.html).toContain(`href="${unsubscribe_url}"`);
    expect(message.text).toBe(`Hi Ada\n\nPlain shop\nUnsubscribe: ${unsubscribe_url}\nManage preferences: ${preferences_url}`);
  });

  it('a template that shows {{ unsubscribe_url }} (through a filter or assign too) gets no footer; each part is judged alone', async () => {
    const ws = await h().workspace('Linked shop');
    const own = await send(ws, {
      html: '<p>Hi</p><a href="{{ unsubscribe_url }}">Leave</a>',
      text: '{% assign out = unsubscribe_url %}Hi, leave at {{ out | strip }}',
    });
    expect(countOf(own.message.html, own.unsubscribe_url)).toBe(1);
    expect(own.message.html).not.toContain('Manage preferences');
    expect(own.message.text).toBe(`Hi, leave at ${own.unsubscribe_url}`);

    // The link only in a branch that is not taken does not count; the HTML has it, the text part not.
    const branch = await send(ws, {
      html: '<p>{{ unsubscribe_url | prepend: "Leave: " }}</p>',
      text: '{% if false %}{{ unsubscribe_url }}{% endif %}Hi',
    });
    expect(branch.message.html.startsWith(`<p>Leave: ${branch.unsubscribe_url}</p>`)).toBe(true);
    expect(branch.message.html).not.toContain('Manage preferences');
    expect(branch.message.text).toContain(`Hi\n\nLinked shop\nUnsubscribe: ${branch.unsubscribe_url}`);
  });

  it('a custom footer_html / footer_text with the postal address renders, and GET /settings returns them (null when unset)', async () => {
    const ws = await h().workspace('Custom shop');
    expect((await api(ws, 'GET', '/settings')).json()).toMatchObject({ footer_html: null, footer_text: null, postal_address: null });
    const footer = {
      footer_html: '<div class="foot">{{ workspace.name }} · {{ workspace.postal_address }} · <a href="{{ unsubscribe_url }}">Leave</a> · <a href="{{ preferences_url }}">Choose</a></div>',
      footer_text: '-- {{ workspace.name }}, {{ workspace.postal_address }}; leave: {{ unsubscribe_url }}',
      postal_address: '  12 Rue de la Paix, 75002 Paris  ',
    };
    const patched = await api(ws, 'PATCH', '/settings', footer);
    expect(patched.statusCode, patched.body).toBe(200);
    const expected = { ...footer, postal_address: '12 Rue de la Paix, 75002 Paris' };
    expect(patched.json()).toMatchObject(expected);
    expect((await api(ws, 'GET', '/settings')).json()).toMatchObject(expected);

    const { message, unsubscribe_url, preferences_url } = await send(ws, { html: '<body><p>Sale</p></body>', text: 'Sale' });
    expect(message.html).toContain(
      `<div class="foot">Custom shop · 12 Rue de la Paix, 75002 Paris · <a href="${unsubscribe_url}">Leave</a> · <a href="${preferences_url}">Choose</a></div>`,
    );
    expect(message.html).not.toContain('Manage preferences');
    expect(message.text).toBe(`Sale\n\n-- Custom shop, 12 Rue de la Paix, 75002 Paris; leave: ${unsubscribe_url}`);

    // The default footer shows the address once it is set; null goes back to the default; '' clears the address.
    await api(ws, 'PATCH', '/settings', { footer_html: null, footer_text: null, postal_address: '1 Main St\nSpringfield' });
    const byDefault = await send(ws, { html: '<p>Again</p>', text: 'Again' });
    expect(byDefault.message.html).toContain('Custom shop<br>1 Main St<br />\nSpringfield<br><a href=');
    expect(byDefault.message.text).toContain('Again\n\nCustom shop\n1 Main St\nSpringfield\nUnsubscribe: ');
    expect((await api(ws, 'PATCH', '/settings', { postal_address: '' })).json()).toMatchObject({ footer_html: null, footer_text: null, postal_address: null });
  });

  it('a transactional flow’s mail is untouched', async () => {
    const ws = await h().workspace();
    const contactId = await contact(ws, 'subscribed', { first_name: 'Tim' });
    const html = '<html><body><p>Your order {{ contact.first_name }}</p></body></html>';
    const flow = await api(ws, 'POST', '/flows', {
      name: 'Receipt',
      status: 'live',
      message_type: 'transactional',
      trigger: { type: 'event', event_name: 'receipt' },
      steps: [{ type: 'email', subject: 'Receipt', html, text: 'Your order' }],
    });
    expect(flow.statusCode, flow.body).toBe(201);
    expect((await api(ws, 'POST', '/events', { contact_id: contactId, event_name: 'receipt' })).statusCode).toBe(201);
    await work();
    const [message] = await messagesOf(ws, `flow_id=${flow.json().id}`);
    expect(message!.status).toBe('captured');
    expect(message!.html).toMatch(/^<html><body><p>Your order Tim<\/p><img[^>]+><\/body><\/html>$/);
    expect(message!.text).toBe('Your order');
  });

  it('a bad footer template is a 400 at PATCH naming the field, and changes nothing', async () => {
    const ws = await h().workspace();
    await api(ws, 'PATCH', '/settings', { footer_text: 'Bye {{ unsubscribe_url }}' });
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ footer_html: '{% if %}' }, /^footer_html: /],
      [{ footer_html: '<p>{{ "x" | no_such_filter }}</p>' }, /^footer_html: /],
      [{ footer_text: '{% for x in (1..100000000) %}{{ x }}{% endfor %}', postal_address: 'Somewhere' }, /^footer_text: /],
      [{ footer_html: '' }, /footer_html/],
      [{ footer_text: 42 }, /footer_text/],
      [{ postal_address: 'x'.repeat(501) }, /postal_address/],
    ];
    for (const [body, error] of cases) {
      const reply = await api(ws, 'PATCH', '/settings', body);
      expect(reply.statusCode, JSON.stringify(body)).toBe(400);
      expect(reply.json().error, JSON.stringify(body)).toMatch(error);
    }
    expect((await api(ws, 'GET', '/settings')).json()).toMatchObject({ footer_html: null, footer_text: 'Bye {{ unsubscribe_url }}', postal_address: null });
  });

  it('a footer past a limit for one recipient fails that message alone, naming footer_html', async () => {
    const ws = await h().workspace();
    const patched = await api(ws, 'PATCH', '/settings', { footer_html: '{% for i in (1..contact.n) %}x{% endfor %}<a href="{{ unsubscribe_url }}">Leave</a>' });
    expect(patched.statusCode, patched.body).toBe(200);
    const heavy = await contact(ws, 'subscribed', { n: 100_000_000 });
    const light = await contact(ws, 'subscribed', { n: 2 });
    const id = await campaign(ws, { html: '<p>Hi</p>' });
    await api(ws, 'POST', `/campaigns/${id}/send`);
    await work();
    const [failed] = await messagesOf(ws, `campaign_id=${id}&contact_id=${heavy}`);
    expect(failed).toMatchObject({ status: 'failed' });
    expect(failed!.error).toMatch(/^render failed: footer_html: /);
    const [sent] = await messagesOf(ws, `campaign_id=${id}&contact_id=${light}`);
    expect(sent).toMatchObject({ status: 'captured' });
    expect(sent!.html).toContain(`<p>Hi</p>\nxx<a href="${(await unsubscribeUrlOf(ws, light, sent!.id)).unsubscribe_url}">Leave</a>`);
  });

  it('the preview shows the footer', async () => {
    const ws = await h().workspace('Preview shop');
    const contactId = await contact(ws, 'subscribed', { first_name: 'Pia' });
    await api(ws, 'PATCH', '/settings', { postal_address: '5 Preview Road' });
    const id = await campaign(ws, { html: '<body><p>Hi {{ contact.first_name }}</p></body>', text: 'Hi' });
    const reply = await api(ws, 'POST', `/campaigns/${id}/preview`, { contact_id: contactId });
    expect(reply.statusCode, reply.body).toBe(200);
    const preview = reply.json();
    expect(preview.html).toMatch(/<p>Hi Pia<\/p><p style="[^"]+">Preview shop<br>5 Preview Road<br><a href="[^"]+\/cp\/unsubscribe\/[^"]+"[^>]*>Unsubscribe<\/a>/);
    // The preview's own consent link (its message is never stored, so the link changes nothing when followed).
    const unsubscribe_url = /href="([^"]+\/cp\/unsubscribe\/[^"]+)"/.exec(preview.html)![1]!;
    expect(preview.text).toContain(`Hi\n\nPreview shop\n5 Preview Road\nUnsubscribe: ${unsubscribe_url}`);
  });
});

/** A relay on a loopback port that keeps what arrives. */
const arrived: ParsedMail[] = [];
const relay = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  onData: (stream, _session, callback) => void simpleParser(stream).then((mail) => (arrived.push(mail), callback()), callback),
});
await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
afterAll(() => new Promise<void>((resolve) => relay.close(() => resolve())));

describeEachDatabase(
  'marketing footer over SMTP',
  (h) => {
    const { api, contact, campaign, work } = sendingHelpers(h);

    it('the mail on the wire carries, in its HTML and its text part, the URL of its own List-Unsubscribe header', async () => {
      const ws = await h().workspace('Wire shop');
      const email = `wire-${Math.random().toString(36).slice(2)}@example.com`;
      await contact(ws, 'subscribed', { first_name: 'Wim' }, email);
      const id = await campaign(ws, { html: '<html><body><p>Hi {{ contact.first_name }}</p><a href="https://shop.test/">Shop</a></body></html>' });
      await api(ws, 'POST', `/campaigns/${id}/send`);
      await work();
      const mail = arrived.find((m) => m.to && 'value' in m.to && m.to.value[0]?.address === email)!;
      const header = mail.headerLines.find((line) => line.key === 'list-unsubscribe')!.line;
      const url = /<([^>]+)>/.exec(header)![1]!;
      expect(url).toMatch(/\/cp\/unsubscribe\/[A-Za-z0-9_-]+$/);
      expect(mail.html).toContain(`href="${url}"`);
      expect(mail.html).toContain('/t/c/');
      expect(mail.text).toContain(url);
      expect(mail.text).toContain('Wire shop');
    });
  },
  { EMK_SMTP_URL: `smtp://127.0.0.1:${(relay.server.address() as AddressInfo).port}`, EMK_SMTP_RATE: '0' },
);
