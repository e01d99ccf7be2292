import { expect, it } from 'vitest';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

/** An MJML newsletter: Liquid in text, in an attribute, a loop in mj-raw around columns, a product block in mj-text. */
const MJML = `<mjml>
  <mj-head><mj-title>News</mj-title></mj-head>
  <mj-body>
    <mj-section>
      <mj-column>
        <mj-text>Hello {{ contact.first_name | default: "there" }}</mj-text>
        <mj-button href="https://shop.test/for/{{ contact.first_name }}">Shop</mj-button>
      </mj-column>
    </mj-section>
    <mj-section>
      <mj-raw>{% products feed: "FEED", limit: 2 %}</mj-raw>
      <mj-column>
        <mj-image src="{{ item.image_url }}" href="{{ item.url }}" alt="{{ item.title }}" />
        <mj-text>{{ item.title }}{% if item.price > 0 %} {{ item.price }} {{ item.currency }}{% endif %}</mj-text>
      </mj-column>
      <mj-raw>{% endproducts %}</mj-raw>
    </mj-section>
  </mj-body>
</mjml>`;

describeEachDatabase('content formats: MJML and CSS inlining', (h) => {
  const { api, contact, campaign, work, messagesOf } = sendingHelpers(h);

  /** A workspace with two products and a feed of them (its id). */
  async function shop(ws: TestWorkspace): Promise<string> {
    for (const [n, price] of [[1, 12], [2, 30]] as const) {
      const reply = await api(ws, 'POST', '/ecommerce/products', {
        external_id: `p${n}`,
        title: `Shirt ${n}`,
        price,
        currency: 'EUR',
        url: `https://shop.test/p/${n}`,
        image_url: `https://cdn.shop.test/p/${n}.jpg`,
      });
      expect(reply.statusCode, reply.body).toBeLessThan(300);
    }
    const feed = await api(ws, 'POST', '/product-feeds', { name: 'All', max_items: 10, recommendation_type: 'newest' });
    expect(feed.statusCode, feed.body).toBe(201);
    return feed.json().feed.id;
  }

  it('an MJML campaign is compiled once, Liquid runs per recipient; the product block fills the columns', async () => {
    const ws = await h().workspace();
    const feedId = await shop(ws);
    await contact(ws, 'subscribed', { first_name: 'Ann' });
    await contact(ws, 'subscribed', { first_name: 'Bob' });
    const id = await campaign(ws, { format: 'mjml', html: MJML.replace('FEED', feedId) });
    const record = (await api(ws, 'GET', `/campaigns/${id}`)).json();
    expect(record).toMatchObject({ format: 'mjml', html: MJML.replace('FEED', feedId) });
    expect((await api(ws, 'POST', `/campaigns/${id}/send`, {})).statusCode).toBe(202);
    await work();
    const messages = await messagesOf(ws, `campaign_id=${id}`);
    expect(messages.map((m) => m.status)).toEqual(['captured', 'captured']);
    for (const message of messages) {
      const name = message.html.includes('Hello Ann') ? 'Ann' : 'Bob';
      expect(message.html).toContain(`Hello ${name}`);
      // MJML's output: a responsive table layout with its media queries, no mj- element left, no Liquid left.
      expect(message.html).toMatch(/<!doctype html>/i);
      expect(message.html).toContain('@media only screen and (min-width:480px)');
      expect(message.html).not.toMatch(/<mj-|\{\{|\{%|emkliquid/);
      expect(message.html).toContain('Shirt 1 12 EUR');
      expect(message.html).toContain('Shirt 2 30 EUR');
      // Images as written (the pixel aside), links tracking-wrapped as every sent link.
      expect(message.html).toContain('src="https://cdn.shop.test/p/1.jpg"');
      expect(message.html).toContain('alt="Shirt 2"');
      expect(message.html).not.toContain('https://shop.test/p/1"');
      expect(message.html).toMatch(/href="http:\/\/localhost:\d+\/t\/c\/[A-Za-z0-9_-]+"/);
      expect(message.text).toContain(`Hello ${name}`);
    }
  });

  it('an MJML error at save is a 400 naming the field and the line of the source; nothing is stored', async () => {
    const ws = await h().workspace();
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ format: 'mjml', html: '<mjml>\n<mj-body>\n\n<mj-column><mj-text>x</mj-text></mj-column>\n</mj-body>\n</mjml>' }, /^html: line 4: mj-column cannot be used inside mj-body/],
      // A Liquid tag spanning lines counts as its lines: the error names the original line.
      [{ format: 'mjml', html: '<mjml>\n<mj-body>{% comment\n%}{% endcomment %}\n<mj-section><mj-column><mj-text foo="bar">x</mj-text></mj-column></mj-section>\n</mj-body></mjml>' }, /^html: line 4: Attribute foo is illegal/],
      // Liquid between MJML elements would be dropped: it belongs in mj-raw.
      [{ format: 'mjml', html: '<mjml><mj-body>\n<mj-section>\n{% for i in (1..2) %}<mj-column><mj-text>x</mj-text></mj-column>{% endfor %}\n</mj-section></mj-body></mjml>' }, /^html: line 3: Liquid \{% for i in \(1\.\.2\) %\} is not inside an MJML element's content: put it in <mj-raw>/],
      [{ format: 'mjml', html: '<p>not mjml</p>' }, /^html: line 1: an MJML template starts with <mjml>/],
      // Liquid errors are still Liquid's, after the MJML compile.
      [{ format: 'mjml', html: '<mjml><mj-body><mj-section><mj-column><mj-text>{% if %}</mj-text></mj-column></mj-section></mj-body></mjml>' }, /^html: /],
      [{ format: 'mjm', html: '<p>x</p>' }, /format must be one of html, mjml/],
    ];
    for (const [body, message] of bad) {
      const reply = await api(ws, 'POST', '/campaigns', { name: 'N', subject: 'S', ...body });
      expect(reply.statusCode, JSON.stringify(body)).toBe(400);
      expect(reply.json().error, JSON.stringify(body)).toMatch(message);
    }
    expect((await api(ws, 'GET', '/campaigns')).json().meta.total).toBe(0);
  });

  it('format is PATCHable: a new format is checked against the stored HTML, a new HTML against the stored format', async () => {
    const ws = await h().workspace();
    const id = await campaign(ws, { html: '<p>Hello {{ contact.first_name }}</p>' });
    expect((await api(ws, 'GET', `/campaigns/${id}`)).json().format).toBe('html');
    const toMjml = await api(ws, 'PATCH', `/campaigns/${id}`, { format: 'mjml' });
    expect(toMjml.statusCode).toBe(400);
    expect(toMjml.json().error).toMatch(/^html: line 1: an MJML template starts with <mjml>/);
    const mjml = '<mjml><mj-body><mj-section><mj-column><mj-text>Hi {{ contact.first_name }}</mj-text></mj-column></mj-section></mj-body></mjml>';
    const both = await api(ws, 'PATCH', `/campaigns/${id}`, { format: 'mjml', html: mjml });
    expect(both.statusCode, both.body).toBe(200);
    expect(both.json()).toMatchObject({ format: 'mjml', html: mjml });
    const htmlOnly = await api(ws, 'PATCH', `/campaigns/${id}`, { html: '<p>plain</p>' });
    expect(htmlOnly.statusCode).toBe(400);
    expect(htmlOnly.json().error).toMatch(/^html: line 1/);
    expect((await api(ws, 'GET', `/campaigns/${id}`)).json()).toMatchObject({ format: 'mjml', html: mjml });
  });

  it('HTML templates get their <style> inlined once; media queries stay; Liquid in text, href and if-blocks survives', async () => {
    const ws = await h().workspace();
    await contact(ws, 'subscribed', { first_name: 'Ann', vip: true });
    await contact(ws, 'subscribed', { first_name: 'Bob' });
    const html =
      '<html><head><style>p.greet { color: #ff0000; font-size: 18px } a { color: #00aa00 } @media (max-width: 600px) { p.greet { font-size: 14px } }</style></head><body>' +
      '<p class="greet">Hi {{ contact.first_name }}</p>' +
      '{% if contact.vip %}<p class="greet">VIP {{ contact.first_name | upcase }}</p>{% endif %}' +
      '<a href="https://shop.test/hi/{{ contact.first_name }}?a=1&amp;b=2">Shop</a></body></html>';
    const id = await campaign(ws, { html });
    expect((await api(ws, 'GET', `/campaigns/${id}`)).json()).toMatchObject({ format: 'html', html });
    const cy = await contact(ws, 'subscribed', { first_name: 'Cy', vip: true });
    const preview = await api(ws, 'POST', `/campaigns/${id}/preview`, { contact_id: cy });
    expect(preview.statusCode, preview.body).toBe(200);
    expect(preview.json().html).toContain('<p class="greet" style="color: #ff0000; font-size: 18px;">Hi Cy</p>');
    expect(preview.json().html).toContain('VIP CY');
    // A preview shows links as written, with the Liquid rendered in the href.
    expect(preview.json().html).toContain('<a href="https://shop.test/hi/Cy?a=1&amp;b=2" style="color: #00aa00;">Shop</a>');
    expect(preview.json().html).toMatch(/<style>\s*@media \(max-width: 600px\) \{\s*p\.greet \{\s*font-size: 14px;\s*\}\s*\}\s*<\/style>/);
    expect(preview.json().html).not.toContain('p.greet { color');

    expect((await api(ws, 'POST', `/campaigns/${id}/send`, {})).statusCode).toBe(202);
    await work();
    const messages = await messagesOf(ws, `campaign_id=${id}`);
    expect(messages).toHaveLength(3);
    const byName = (name: string) => messages.find((m) => m.html.includes(`Hi ${name}<`))!;
    expect(byName('Ann').html).toContain('<p class="greet" style="color: #ff0000; font-size: 18px;">VIP ANN</p>');
    expect(byName('Bob').html).not.toContain('VIP');
    expect(byName('Bob').html).toMatch(/<a href="http:\/\/localhost:\d+\/t\/c\/[A-Za-z0-9_-]+" style="color: #00aa00;">Shop<\/a>/);
  });

  it('MJML output loses its indentation, except where a <pre> needs its white space', async () => {
    const ws = await h().workspace();
    const cy = await contact(ws, 'subscribed', { first_name: 'Cy' });
    const body = (inner: string) => `<mjml><mj-body><mj-section><mj-column><mj-text>${inner}</mj-text></mj-column></mj-section></mj-body></mjml>`;
    const plain = await campaign(ws, { format: 'mjml', html: body('Hi {{ contact.first_name }}') });
    const html = (await api(ws, 'POST', `/campaigns/${plain}/preview`, { contact_id: cy })).json().html as string;
    expect(html).toContain('Hi Cy');
    expect(html).not.toMatch(/\n[ \t]+</);
    const pre = await campaign(ws, { format: 'mjml', html: body('<pre>{{ contact.first_name }}\n    indented</pre>') });
    const kept = (await api(ws, 'POST', `/campaigns/${pre}/preview`, { contact_id: cy })).json().html as string;
    expect(kept).toContain('<pre>Cy\n    indented</pre>');
  });

  it('a template without <style> is sent as written', async () => {
    const ws = await h().workspace();
    const cy = await contact(ws, 'subscribed', { first_name: 'Cy' });
    const id = await campaign(ws, { html: '<div>{% if true %}<b>Hi {{ contact.first_name }}</b>{% endif %}</div>' });
    const preview = await api(ws, 'POST', `/campaigns/${id}/preview`, { contact_id: cy });
    expect(preview.json().html).toMatch(/^<div><b>Hi Cy<\/b><\/div>/);
  });

  it('flow email steps take a format too, checked at save with the step named, stored and returned', async () => {
    const ws = await h().workspace();
    const mjml = '<mjml><mj-body><mj-section><mj-column><mj-text>Welcome {{ contact.first_name }}</mj-text></mj-column></mj-section></mj-body></mjml>';
    const step = { type: 'email', subject: 'Welcome', html: mjml, format: 'mjml' };
    const bad = await api(ws, 'POST', '/flows', {
      name: 'W',
      trigger: { type: 'event', event_name: 'signed_up' },
      steps: [{ type: 'delay', minutes: 1 }, { ...step, html: '<mjml><mj-body>\n<mj-text>x</mj-text></mj-body></mjml>' }],
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/^steps\[1\]\.html: line 2: mj-text cannot be used inside mj-body/);
    const created = await api(ws, 'POST', '/flows', { name: 'W', trigger: { type: 'event', event_name: 'signed_up' }, steps: [step, { ...step, format: undefined, html: '<p>x</p>' }] });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().steps.map((s: { format: string }) => s.format)).toEqual(['mjml', 'html']);
    const flowId = created.json().id;
    const patched = await api(ws, 'PATCH', `/flows/${flowId}`, { steps: [{ ...step, format: 'html' }] });
    expect(patched.statusCode).toBe(200);
    expect((await api(ws, 'GET', `/flows/${flowId}`)).json().steps[0]).toMatchObject({ format: 'html', html: mjml });

    // Live, the MJML step sends compiled.
    await api(ws, 'PATCH', `/flows/${flowId}`, { steps: [step], status: 'live' });
    const ann = await contact(ws, 'subscribed', { first_name: 'Ann' });
    const event = await api(ws, 'POST', '/events', { contact_id: ann, event_name: 'signed_up' });
    expect(event.statusCode, event.body).toBeLessThan(300);
    await work();
    const [message] = await messagesOf(ws, `flow_id=${flowId}`);
    expect(message?.html).toContain('Welcome Ann');
    expect(message?.html).toMatch(/<!doctype html>/i);
  });
});
