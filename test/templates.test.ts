import { afterAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../src/domain/errors.js';
import type { Product } from '../src/domain/products/product.schema.js';
import { createBlockProductSource, type BlockProductRequest, type BlockProductSource } from '../src/domain/templates/product-block-source.js';
import { createTemplates, type Templates, type TemplateVariables } from '../src/domain/templates/template-engine.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

const DAY = 86_400_000;
const daysAgo = (days: number) => new Date(Date.now() - days * DAY).toISOString();

const NOBODY = { workspaceId: 'w', contactId: null };

/** A source that answers every block with these products (by external id) and records what it was asked. */
function fixedSource(externalIds: string[]): BlockProductSource & { requests: BlockProductRequest[] } {
  const requests: BlockProductRequest[] = [];
  const source = async (request: BlockProductRequest) => {
    requests.push(request);
    return externalIds.map((id) => ({ id: `id-${id}`, external_id: id, title: id.toUpperCase() }) as Product);
  };
  return Object.assign(source, { requests });
}

describe('templates: output, checks and the block tag (no database)', () => {
  const templates = createTemplates({ blockProducts: fixedSource(['a', 'b', 'c']) });
  const render = (html: string, variables: TemplateVariables = {}) => templates.render(templates.compile(html), variables, NOBODY);
  /** `templates.check` of one template, by its field name (`html`, `steps[1].html`, …). */
  const check = (source: string, field = 'html') => {
    const [, prefix, part] = /^(.*?)(subject|html|text)$/.exec(field)!;
    return templates.check({ [part as 'html']: source }, prefix);
  };
  afterAll(() => templates.close());

  const contact = { email: 'ann@example.com', first_name: '<script>alert(1)</script>', last_name: 'O\'Hara & Co', phone: '+3312345678' };

  it('escapes every output by default; | raw opts out', async () => {
    expect(await render('<p>Hi {{ contact.first_name }}</p>', { contact })).toBe('<p>Hi &lt;script&gt;alert(1)&lt;/script&gt;</p>');
    expect(await render('{{ contact.last_name }}', { contact })).toBe('O&#39;Hara &amp; Co');
    expect(await render('{{ contact.first_name | upcase }}', { contact })).toBe('&lt;SCRIPT&gt;ALERT(1)&lt;/SCRIPT&gt;');
    expect(await render('{{ contact.first_name | raw }}', { contact })).toBe('<script>alert(1)</script>');
    expect(await render('{{ contact.note }}', { contact: { ...contact, note: '"quoted" <i>' } })).toBe('&#34;quoted&#34; &lt;i&gt;');
  });

  it('reads every variable group of the contract; a group the send lacks renders as nothing', async () => {
    const variables: TemplateVariables = {
      contact: { ...contact, first_name: 'Ann', tier: 'gold', tags: ['a', 'b'] },
      event: { name: 'signed_up', properties: { plan: 'pro' }, created_at: '2025-01-02T03:04:05.000Z' },
      order: {
        id: '1001',
        external_id: 'ord-9',
        total_amount: 59.9,
        currency: 'EUR',
        status: 'paid',
        items: [
          { external_id: 'tee', title: 'Tee', quantity: 2, price: 10 },
          { external_id: 'cap', title: 'Cap', quantity: 1, price: 15 },
        ],
      },
      cart: { external_id: 'cart-1', total_amount: 25, currency: 'USD', checkout_url: 'https://shop.test/checkout?c=1&x=2', items: [{ title: 'Shirt' }] },
      workspace: { name: 'Acme Shop' },
      unsubscribe_url: 'https://emk.test/u/abc',
      preferences_url: 'https://emk.test/p/abc',
    };
    const html = [
      '{{ contact.email }}|{{ contact.first_name }}|{{ contact.last_name }}|{{ contact.phone }}|{{ contact.tier }}|{{ contact.tags | join: "+" }}',
      '{{ event.name }}|{{ event.properties.plan }}|{{ event.created_at }}',
      '{{ order.id }}|{{ order.external_id }}|{{ order.total_amount }}|{{ order.currency }}|{{ order.status }}|{% for i in order.items %}{{ i.quantity }}x{{ i.title }};{% endfor %}',
      '{{ cart.external_id }}|{{ cart.total_amount }}|{{ cart.currency }}|{{ cart.checkout_url }}|{{ cart.items[0].title }}',
      '{{ workspace.name }}|{{ unsubscribe_url }}|{{ preferences_url }}',
    ].join('\n');
    expect((await render(html, variables)).split('\n')).toEqual([
      'ann@example.com|Ann|O&#39;Hara &amp; Co|+3312345678|gold|a+b',
      'signed_up|pro|2025-01-02T03:04:05.000Z',
      '1001|ord-9|59.9|EUR|paid|2xTee;1xCap;',
      'cart-1|25|USD|https://shop.test/checkout?c=1&amp;x=2|Shirt',
      'Acme Shop|https://emk.test/u/abc|https://emk.test/p/abc',
    ]);
    expect(await render('[{{ order.id }}{{ cart.checkout_url }}{{ event.name }}]', { workspace: { name: 'x' } })).toBe('[]');
  });

  it('check refuses a template that does not parse, naming the field; a good one passes', async () => {
    const refused: Array<[string, string, RegExp]> = [
      ['{% products feed: "f" %}<p>{{ item.title }}</p>', 'html', /^html: unexpected end of template, missing \{% endproducts %\}/],
      ['{% if contact.first_name %}Hi', 'steps[1].html', /^steps\[1\]\.html: tag \{% if contact\.first_name %\} not closed/],
      ['{{ contact.first_name | shout }}', 'html', /^html: undefined filter: shout/],
      ['Hello {{ contact.first_name', 'steps[0].html', /^steps\[0\]\.html: output "\{\{ contact\.first_name" not closed/],
      ['{% endproducts %}', 'html', /^html: tag "endproducts" not found/],
      // Templates come from the database: nothing may read a file.
      ['{% include "/etc/passwd" %}', 'html', /^html: tag "include" not found/],
      ['{% render "secrets" %}', 'html', /^html: tag "render" not found/],
      ['{% layout "base" %}', 'html', /^html: tag "layout" not found/],
    ];
    for (const [html, field, message] of refused) {
      const caught = await check(html, field).then(() => null, (error: unknown) => error);
      expect(caught, html).toBeInstanceOf(ValidationError);
      expect((caught as Error).message, html).toMatch(message);
    }
    await check('<p>Hi {{ contact.first_name | default: "there" }}</p>{% products feed: "f" %}{{ item.title }}{% endproducts %}', 'html');
  });

  it('check refuses a products tag without a feed, with a limit outside 1..50 or an unknown fallback', async () => {
    const refused: Array<[string, RegExp]> = [
      ['', /feed is required/],
      ['limit: 4', /feed is required/],
      ['feed: ""', /feed is required/],
      ['feed: some_variable', /feed is required/],
      ['feed: 12', /feed is required/],
      ['feed: "f", limit: 0', /limit must be an integer from 1 to 50/],
      ['feed: "f", limit: 51', /limit must be an integer from 1 to 50/],
      ['feed: "f", limit: 2.5', /limit must be an integer from 1 to 50/],
      ['feed: "f", limit: "4"', /limit must be an integer from 1 to 50/],
      ['feed: "f", limit: n', /limit must be an integer from 1 to 50/],
      ['feed: "f", fallback: "newest"', /fallback must be one of best_selling, most_viewed, cart_or_order_items/],
      ['feed: "f", fallback: best_selling', /fallback must be one of/],
      ['feed: "f", colour: "red"', /unknown argument colour/],
      ['feed: "f", feed: "g"', /feed given twice/],
      ['feed: "f" | upcase', /cannot read "\| upcase"/],
    ];
    for (const [args, message] of refused) {
      const html = `{% products ${args} %}{{ item.title }}{% endproducts %}`;
      await expect(check(html, 'html'), args).rejects.toThrow(ValidationError);
      await expect(check(html, 'html'), args).rejects.toThrow(message);
    }
    for (const args of ['feed: "f", limit: 1', 'feed: "f", limit: 50', 'feed: "f", fallback: "most_viewed"', 'feed: "f" limit: 3 fallback: "cart_or_order_items"']) {
      await check(`{% products ${args} %}{% endproducts %}`, 'html');
    }
  });

  it('hands the block its arguments and the recipient; limit defaults to 4 and fallback to none', async () => {
    const source = fixedSource(['a']);
    const own = createTemplates({ blockProducts: source, threads: 1 });
    const html = '{% products feed: "feed-1" %}{% endproducts %}{% products feed: "feed-2", limit: 12, fallback: "most_viewed" %}{% endproducts %}';
    await own.render(own.compile(html), {}, { workspaceId: 'ws-1', contactId: 'c-1' });
    expect(source.requests).toEqual([
      { workspaceId: 'ws-1', contactId: 'c-1', feedId: 'feed-1', limit: 4, fallback: null },
      { workspaceId: 'ws-1', contactId: 'c-1', feedId: 'feed-2', limit: 12, fallback: 'most_viewed' },
    ]);
  });

  it('forloop inside a block works as in a for loop: index, first, last, length, break; an outer loop is left intact', async () => {
    const block = '{% products feed: "f" %}{{ forloop.index }}/{{ forloop.length }}{% if forloop.first %}F{% endif %}{% if forloop.last %}L{% endif %} {{ item.title }};{% endproducts %}';
    expect(await render(block)).toBe('1/3F A;2/3 B;3/3L C;');
    expect(await render('{% products feed: "f" %}{{ forloop.index0 }}{{ forloop.rindex }}{{ forloop.rindex0 }};{% endproducts %}')).toBe('032;121;210;');
    expect(await render('{% products feed: "f" %}{% if forloop.index == 2 %}{% break %}{% endif %}{{ item.title }}{% endproducts %}')).toBe('A');
    expect(await render('{% products feed: "f" %}{% if forloop.first %}{% continue %}{% endif %}{{ item.title }}{% endproducts %}')).toBe('BC');
    expect(await render('{% for x in (1..2) %}{% products feed: "f" %}{{ item.title }}{% endproducts %}:{{ forloop.index }}{{ item.title }};{% endfor %}')).toBe('ABC:1;ABC:2;');
    // The loop cannot be moved from the template.
    expect(await render('{% products feed: "f" %}{{ forloop.next }}{{ forloop.index }}{% endproducts %}')).toBe('123');
  });

  it('a render that fails rejects with an Error; the compiled template still renders for the next recipient', async () => {
    let failing = true;
    const own = createTemplates({
      threads: 1,
      blockProducts: async () => {
        if (failing) throw new Error('ranking failed');
        return [{ id: '1', title: 'Tee' } as Product];
      },
    });
    const compiled = own.compile('Hi {% products feed: "f" %}{{ item.title }}{% endproducts %}');
    await expect(own.render(compiled, {}, NOBODY)).rejects.toThrow('ranking failed');
    failing = false;
    expect(await own.render(compiled, {}, NOBODY)).toBe('Hi Tee');
    // A runaway loop fails its message rather than the process, naming the part and the limit.
    await expect(render('{% for i in (1..100000000) %}x{% endfor %}')).rejects.toThrow(/^html: template needs more than 10000000 characters or items of memory to render$/);
  });

  it('compile parses a template once and keeps it', () => {
    const html = '<p>{{ contact.email }}</p>';
    expect(templates.compile(html)).toBe(templates.compile(html));
    expect(templates.compile(html)).not.toBe(templates.compile(`${html} `));
  });
});

describe('templates: render threads and their limits (no database)', () => {
  const templates = createTemplates({ blockProducts: fixedSource(['a']), limits: { timeoutMs: 300, maxBytes: 2048 }, threads: 2 });
  afterAll(() => templates.close());
  const contact = { email: 'tom@example.com', first_name: 'Tom & Jerry', last_name: '<Cat>', phone: null };

  it('escapes output in the HTML part only: the subject and the text are not HTML', async () => {
    const content = { subject: 'Hi {{ contact.first_name }}', html: '<p>Hi {{ contact.first_name }} {{ contact.last_name }}</p>', text: 'Hi {{ contact.first_name }} {{ contact.last_name }}' };
    expect(await templates.renderMessage(content, { contact }, NOBODY)).toEqual({
      subject: 'Hi Tom & Jerry',
      html: '<p>Hi Tom &amp; Jerry &lt;Cat&gt;</p>',
      text: 'Hi Tom & Jerry <Cat>',
    });
    expect(await templates.renderMessage({ ...content, text: null }, { contact }, NOBODY)).toMatchObject({ text: null });
    // The same text is a different template in each kind of part.
    expect(templates.compile('{{ x }}', 'subject')).not.toBe(templates.compile('{{ x }}', 'html'));
  });

  it('a part past a limit fails naming the part and the limit, never the template; the next render works', async () => {
    const slow = 'SECRET{% for i in (1..3000) %}{% for j in (1..3000) %}{% endfor %}{% endfor %}';
    const ok = { subject: 'S', html: 'H', text: 'T' };
    await expect(templates.renderMessage({ ...ok, text: slow }, {}, NOBODY)).rejects.toThrow(/^text: template took longer than 300 ms to render$/);
    await expect(templates.renderMessage({ ...ok, subject: `{% for i in (1..3) %}${'y'.repeat(1000)}{% endfor %}` }, {}, NOBODY)).rejects.toThrow(
      /^subject: template output exceeds 2048 bytes$/,
    );
    // Stuck in one step, where Liquid's own limit cannot look: the thread is ended at the deadline and replaced.
    await expect(templates.check({ html: '{{ x }}'.repeat(149_000) }, 'steps[2].')).rejects.toThrow(/^steps\[2\]\.html: template took longer than 300 ms to parse$/);
    expect(await templates.renderMessage(ok, {}, NOBODY)).toEqual({ subject: 'S', html: 'H', text: 'T' });
    const error = await templates.renderMessage({ ...ok, html: slow }, {}, NOBODY).catch((e: Error) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).not.toContain('SECRET');
  });

  it('a runaway render costs one thread: others render meanwhile', async () => {
    // Both threads started (two renders at once), so the second is not starting up while the first is stuck.
    await Promise.all([1, 2].map((i) => templates.render(templates.compile(`warm ${i}`), {}, NOBODY)));
    const stuck = templates.check({ html: '{{ x }}'.repeat(149_000) });
    let stuckDone = false;
    void stuck.catch(() => undefined).finally(() => void (stuckDone = true));
    for (let i = 0; i < 5; i++) expect(await templates.render(templates.compile(`<p>{{ n }}${i}</p>`), { n: 'x' } as TemplateVariables, NOBODY)).toBe(`<p>x${i}</p>`);
    expect(stuckDone).toBe(false);
    await expect(stuck).rejects.toThrow(/took longer than 300 ms/);
  });

  it('renders in flight at once each get their own answer (a thread holds two tasks, answered by number)', async () => {
    const renders = Array.from({ length: 60 }, (_, i) => templates.render(templates.compile(`<i>{{ n }}</i>${i % 7}`), { n: `r${i}` } as TemplateVariables, NOBODY));
    expect(await Promise.all(renders)).toEqual(Array.from({ length: 60 }, (_, i) => `<i>r${i}</i>${i % 7}`));
  });
});

describe('templates: a thread holds two tasks (no database)', () => {
  const templates = createTemplates({ blockProducts: fixedSource(['a']), limits: { timeoutMs: 300, maxBytes: 2048 }, threads: 1 });
  afterAll(() => templates.close());

  it('a task held behind a runaway one on its thread is run again on the thread that replaces it', async () => {
    await templates.render(templates.compile('warm'), {}, NOBODY);
    // One thread: the runaway parse runs and the first render waits on the same thread; the rest wait in the pool.
    const stuck = templates.check({ html: '{{ x }}'.repeat(149_000) });
    const renders = [1, 2, 3].map((i) => templates.render(templates.compile(`<p>{{ n }}${i}</p>`), { n: 'x' } as TemplateVariables, NOBODY));
    await expect(stuck).rejects.toThrow(/^html: template took longer than 300 ms to parse$/);
    expect(await Promise.all(renders)).toEqual(['<p>x1</p>', '<p>x2</p>', '<p>x3</p>']);
  });
});

/**
 * The shop the database tests start from (website products):
 *  tee    Tee      10  [Tops]
 *  shirt  Shirt    25  [Tops]
 *  jeans  Jeans    60  [Bottoms]
 *  shorts Shorts   30  [Bottoms]
 *  cap    Cap      15  [Hats]
 * and best_selling: jeans 5, tee 4, cap 2, shirt 1 (shorts never sold).
 */
const CATALOG = [
  {
    external_id: 'tee',
    title: 'Tee <Organic>',
    price: 10,
    compare_at_price: 12.5,
    currency: 'EUR',
    url: 'https://shop.test/tee?colour=red&size=m',
    image_url: 'https://cdn.shop.test/tee.jpg',
    description: '<b>Soft</b> cotton',
    categories: ['Tops', 'Basics'],
  },
  { external_id: 'shirt', title: 'Shirt', price: 25, categories: ['Tops'] },
  { external_id: 'jeans', title: 'Jeans', price: 60, categories: ['Bottoms'] },
  { external_id: 'shorts', title: 'Shorts', price: 30, categories: ['Bottoms'] },
  { external_id: 'cap', title: 'Cap', price: 15, categories: ['Hats'] },
];

describeEachDatabase('templates: product blocks', (h) => {
  const hook = (ws: TestWorkspace, body: unknown) =>
    h().request({
      method: 'POST',
      url: `/ecom/website/${ws.integrationId}`,
      headers: { authorization: `Bearer ${ws.integrationKey}`, 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });

  let deliveries = 0;
  const order = async (ws: TestWorkspace, email: string, items: unknown[]) => {
    const id = `o-${++deliveries}`;
    const res = await hook(ws, {
      event_type: 'order_placed',
      external_id: `d-${id}`,
      email,
      order: { external_id: id, order_number: id, total_amount: 10, currency: 'EUR', status: 'paid', ordered_at: daysAgo(1), items },
    });
    expect(res.statusCode, res.body).toBe(200);
  };

  const cart = async (ws: TestWorkspace, email: string, items: unknown[]) => {
    const id = `c-${++deliveries}`;
    const res = await hook(ws, { event_type: 'added_to_cart', external_id: `d-${id}`, email, cart: { external_id: id, items } });
    expect(res.statusCode, res.body).toBe(200);
  };

  const contactId = async (ws: TestWorkspace, email: string): Promise<string> => {
    const res = await h().request({ method: 'GET', url: `/api/v1/contacts?email=${email}`, key: ws.apiKey });
    expect(res.statusCode).toBe(200);
    return res.json().data[0].id;
  };

  const shop = async (): Promise<TestWorkspace> => {
    const ws = await h().workspace();
    for (const product of CATALOG) {
      const res = await hook(ws, { event_type: 'product_created', external_id: `p-${product.external_id}`, product });
      expect(res.statusCode, res.body).toBe(200);
    }
    await order(ws, 'seller@example.com', [
      { external_id: 'jeans', quantity: 5 },
      { external_id: 'tee', quantity: 4 },
      { external_id: 'cap', quantity: 2 },
      { external_id: 'shirt', quantity: 1 },
    ]);
    return ws;
  };

  const feed = async (ws: TestWorkspace, body: Record<string, unknown>): Promise<string> => {
    const res = await h().request({ method: 'POST', url: '/api/v1/product-feeds', key: ws.apiKey, json: { name: 'f', ...body } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().feed.id;
  };

  const deleteFeed = async (ws: TestWorkspace, id: string) => {
    const res = await h().request({ method: 'DELETE', url: `/api/v1/product-feeds/${id}`, key: ws.apiKey });
    expect(res.statusCode).toBeLessThan(300);
  };

  const made: Templates[] = [];
  afterAll(() => Promise.all(made.map((t) => t.close())));
  const templates = () => {
    const own = createTemplates({ blockProducts: createBlockProductSource({ feeds: h().services.feeds, clock: h().clock }), threads: 1 });
    made.push(own);
    return own;
  };

  /** The external ids a block renders, in order. */
  const block = async (ws: TestWorkspace, args: string, contact: string | null = null, own = templates()) => {
    const html = `{% products ${args} %}{{ item.external_id }};{% endproducts %}`;
    const out: string = await own.render(own.compile(html), {}, { workspaceId: ws.id, contactId: contact });
    return out.split(';').filter(Boolean);
  };

  it('a best_selling feed renders ranked, for a recipient or none, each product field escaped', async () => {
    const ws = await shop();
    const id = await feed(ws, { recommendation_type: 'best_selling' });
    const me = await contactId(ws, 'seller@example.com');
    expect(await block(ws, `feed: "${id}"`, me)).toEqual(['jeans', 'tee', 'cap', 'shirt']);
    expect(await block(ws, `feed: "${id}", limit: 2`, me)).toEqual(['jeans', 'tee']);
    expect(await block(ws, `feed: "${id}", limit: 2`, null)).toEqual(['jeans', 'tee']);

    const own = templates();
    const html = `{% products feed: "${id}", limit: 2 %}{% if item.external_id == "tee" %}{{ item.title }}|{{ item.url }}|{{ item.image_url }}|{{ item.price }}|{{ item.compare_at_price }}|{{ item.currency }}|{{ item.description }}|{{ item.description | raw }}|{{ item.categories | join: "," }}{% endif %}{% endproducts %}`;
    expect(await own.render(own.compile(html), {}, { workspaceId: ws.id, contactId: me })).toBe(
      'Tee &lt;Organic&gt;|https://shop.test/tee?colour=red&amp;size=m|https://cdn.shop.test/tee.jpg|10|12.5|EUR|&lt;b&gt;Soft&lt;/b&gt; cotton|<b>Soft</b> cotton|Tops,Basics',
    );
  });

  it('a per-recipient feed renders each recipient their own products', async () => {
    const ws = await shop();
    await cart(ws, 'ann@example.com', [{ external_id: 'cap' }]);
    await cart(ws, 'bob@example.com', [{ external_id: 'shorts' }, { external_id: 'tee' }]);
    const id = await feed(ws, { recommendation_type: 'added_to_cart' });
    expect(await block(ws, `feed: "${id}"`, await contactId(ws, 'ann@example.com'))).toEqual(['cap']);
    expect((await block(ws, `feed: "${id}"`, await contactId(ws, 'bob@example.com'))).sort()).toEqual(['shorts', 'tee']);
  });

  it('renders in flight at once share one read of a store-wide ranking; a per-recipient feed is read for each', async () => {
    const ws = await shop();
    await cart(ws, 'ann@example.com', [{ external_id: 'cap' }]);
    await cart(ws, 'bob@example.com', [{ external_id: 'shorts' }]);
    const [ann, bob] = [await contactId(ws, 'ann@example.com'), await contactId(ws, 'bob@example.com')];
    const reads = { rankedFor: 0, rankType: 0 };
    const { feeds } = h().services;
    const counted: typeof feeds = {
      ...feeds,
      rankedFor: (...args) => (reads.rankedFor++, feeds.rankedFor(...args)),
      rankType: (...args) => (reads.rankType++, feeds.rankType(...args)),
    };
    const own = createTemplates({ blockProducts: createBlockProductSource({ feeds: counted, clock: h().clock }), threads: 1 });
    made.push(own);
    const sellers = await feed(ws, { recommendation_type: 'best_selling' });
    const carted = await feed(ws, { recommendation_type: 'added_to_cart' });
    const many = <T,>(n: number, f: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => f(i)));

    expect(new Set((await many(20, () => block(ws, `feed: "${sellers}", limit: 2`, ann, own))).map(String))).toEqual(new Set(['jeans,tee']));
    expect(reads.rankedFor).toBe(1);
    // The fallback of a deleted feed: one read of the feed (unknown) per render, one of best_selling for all.
    reads.rankedFor = 0;
    expect(new Set((await many(20, () => block(ws, `feed: "deleted", limit: 3, fallback: "best_selling"`, null, own))).map(String))).toEqual(new Set(['jeans,tee,cap']));
    expect(reads.rankType).toBe(1);
    // Per recipient: each render reads its own, all at once, and each gets its own products.
    reads.rankedFor = 0;
    const carts = await many(10, (i) => block(ws, `feed: "${carted}"`, i % 2 === 0 ? ann : bob, own));
    expect(carts).toEqual(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? ['cap'] : ['shorts'])));
    expect(reads.rankedFor).toBe(10);
  });

  it('tops a short feed up from the fallback, never repeating a product', async () => {
    const ws = await shop();
    // Tops by price: tee, shirt; both are also best sellers.
    const tops = await feed(ws, { categories: ['Tops'], sort_by: 'price_asc' });
    expect(await block(ws, `feed: "${tops}"`)).toEqual(['tee', 'shirt']);
    expect(await block(ws, `feed: "${tops}", limit: 4, fallback: "best_selling"`)).toEqual(['tee', 'shirt', 'jeans', 'cap']);
    expect(await block(ws, `feed: "${tops}", limit: 3, fallback: "best_selling"`)).toEqual(['tee', 'shirt', 'jeans']);
    // The fallback runs out: everything sold once, nothing twice.
    expect(await block(ws, `feed: "${tops}", limit: 50, fallback: "best_selling"`)).toEqual(['tee', 'shirt', 'jeans', 'cap']);
    // A full feed needs no fallback.
    expect(await block(ws, `feed: "${tops}", limit: 1, fallback: "best_selling"`)).toEqual(['tee']);
  });

  it('most_viewed as fallback ranks by views over the whole catalog', async () => {
    const ws = await shop();
    const res = await h().request({
      method: 'POST',
      url: '/api/v1/events/batch',
      key: ws.apiKey,
      json: {
        events: [
          { email: 'seller@example.com', event_name: 'viewed_product', properties: { product_id: 'shorts' } },
          { email: 'seller@example.com', event_name: 'viewed_product', properties: { product_id: 'shorts' } },
          { email: 'seller@example.com', event_name: 'viewed_product', properties: { product_id: 'cap' } },
        ],
      },
    });
    expect(res.json().errors).toEqual([]);
    const empty = await feed(ws, { categories: ['Nothing'] });
    expect(await block(ws, `feed: "${empty}", fallback: "most_viewed"`)).toEqual(['shorts', 'cap']);
  });

  it('a deleted or unknown feed renders the fallback alone; without a fallback, an empty block and no error', async () => {
    const ws = await shop();
    const id = await feed(ws, { categories: ['Hats'] });
    expect(await block(ws, `feed: "${id}", fallback: "best_selling"`)).toEqual(['cap', 'jeans', 'tee', 'shirt']);
    await deleteFeed(ws, id);
    expect(await block(ws, `feed: "${id}", fallback: "best_selling"`)).toEqual(['jeans', 'tee', 'cap', 'shirt']);
    expect(await block(ws, `feed: "no-such-feed", limit: 2, fallback: "best_selling"`)).toEqual(['jeans', 'tee']);

    const own = templates();
    const html = `<p>before</p>{% products feed: "${id}" %}<li>{{ item.title }}</li>{% endproducts %}<p>after</p>`;
    expect(await own.render(own.compile(html), {}, { workspaceId: ws.id, contactId: null })).toBe('<p>before</p><p>after</p>');
  });

  it('a feed of another workspace is unknown here', async () => {
    const ws = await shop();
    const other = await shop();
    const theirs = await feed(other, { categories: ['Hats'] });
    expect(await block(other, `feed: "${theirs}"`)).toEqual(['cap']);
    expect(await block(ws, `feed: "${theirs}"`)).toEqual([]);
  });

  it('cart_or_order_items: the recipient’s own carted and ordered products, most recent first; none without a recipient', async () => {
    const ws = await shop();
    await order(ws, 'me@example.com', [{ external_id: 'jeans' }, { external_id: 'jeans' }]);
    await cart(ws, 'me@example.com', [{ external_id: 'shorts' }, { external_id: 'unknown-product' }]);
    const me = await contactId(ws, 'me@example.com');
    const gone = await feed(ws, { categories: ['Nothing'] });
    expect(await block(ws, `feed: "${gone}", fallback: "cart_or_order_items"`, me)).toEqual(['shorts', 'jeans']);
    // The feed comes first, and a product it holds is not shown twice.
    const bottoms = await feed(ws, { categories: ['Bottoms'], sort_by: 'price_desc' });
    expect(await block(ws, `feed: "${bottoms}", fallback: "cart_or_order_items"`, me)).toEqual(['jeans', 'shorts']);
    // The seller's one order: its products bought at one time (so by id), not in best-selling order (jeans, tee).
    expect(await block(ws, `feed: "${gone}", limit: 2, fallback: "cart_or_order_items"`, await contactId(ws, 'seller@example.com'))).toEqual(['cap', 'jeans']);
    expect(await block(ws, `feed: "${gone}", fallback: "cart_or_order_items"`, null)).toEqual([]);
  });

  it('store-wide fallbacks are read once per few seconds, not once per recipient', async () => {
    const ws = await shop();
    const own = templates();
    const gone = 'deleted-feed';
    expect(await block(ws, `feed: "${gone}", limit: 2, fallback: "best_selling"`, null, own)).toEqual(['jeans', 'tee']);
    await order(ws, 'big@example.com', [{ external_id: 'shorts', quantity: 50 }]);
    expect(await block(ws, `feed: "${gone}", limit: 2, fallback: "best_selling"`, null, own)).toEqual(['jeans', 'tee']);
    // A different limit is a different ranking, read now.
    expect(await block(ws, `feed: "${gone}", limit: 3, fallback: "best_selling"`, null, own)).toEqual(['shorts', 'jeans', 'tee']);
    h().clock.advance(6_000);
    expect(await block(ws, `feed: "${gone}", limit: 2, fallback: "best_selling"`, null, own)).toEqual(['shorts', 'jeans']);
  });

  it('a block whose ranking fails rejects the render', async () => {
    const ws = await shop();
    const id = await feed(ws, { recommendation_type: 'may_also_like' });
    const own = templates();
    // A recipient that does not exist fails the personal fallback (the caller marks that message failed).
    await expect(own.render(own.compile(`{% products feed: "${id}", fallback: "cart_or_order_items" %}{{ item.title }}{% endproducts %}`), {}, { workspaceId: ws.id, contactId: 'no-such-contact' })).rejects.toThrow('contact not found');
  });
});
