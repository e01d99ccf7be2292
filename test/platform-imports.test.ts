import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, inject, it } from 'vitest';
import type { Product } from '../src/domain/products/product.schema.js';
import { runEmk } from './helpers/cli.js';
import { describeEachDatabase } from './helpers/harness.js';

const FIXTURES = join(import.meta.dirname, '../fixtures');
const SHOPIFY_ORDERS = join(FIXTURES, 'shopify/orders_export.csv');
const SHOPIFY_PRODUCTS = join(FIXTURES, 'shopify/products_export.csv');
const SHOPIFY_CUSTOMERS = join(FIXTURES, 'shopify/customers_export.csv');
const WOO_PRODUCTS = join(FIXTURES, 'woocommerce/wc-product-export.csv');
const SHOPIFY_SHOP = 'emk-demo.myshopify.com';
const WOO_SHOP = 'shop.example.com';

/** Imports of the platforms' export files (`--format`), and errors that name the file's line (issue 34, points 4 and 5). */
describeEachDatabase('platform export imports', (h, dialect) => {
  const file = (name: string, text: string) => {
    const path = join(inject('tmpDir'), `${dialect}-platform-${name}`);
    writeFileSync(path, text);
    return path;
  };
  const emk = (workspaceId: string, args: string[]) => runEmk([...args, '--db', h().database.url, '--workspace', workspaceId]);
  const json = async (workspaceId: string, args: string[]) => {
    const result = await emk(workspaceId, [...args, '--json']);
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout);
  };
  const page = { page: 1, perPage: 500 };
  const orderOf = async (workspaceId: string, externalId: string) => {
    const { data } = await h().services.orders.list(workspaceId, { external_id: externalId }, page);
    expect(data).toHaveLength(1);
    return data[0]!;
  };
  const orderCount = async (workspaceId: string) => (await h().services.orders.list(workspaceId, {}, page)).meta.total;
  const contactOf = async (workspaceId: string, email: string) => {
    const { data } = await h().services.contacts.list(workspaceId, { email }, page);
    expect(data, email).toHaveLength(1);
    return data[0]!;
  };
  const contactCount = async (workspaceId: string) => (await h().services.contacts.list(workspaceId, {}, page)).meta.total;
  const catalog = async (workspaceId: string): Promise<Map<string, Product>> =>
    new Map((await h().services.products.list(workspaceId, {}, page)).data.map((p) => [p.external_id, p]));

  it('Shopify orders export: line-item rows become orders with totals, refunds and cancellations; --dry-run writes nothing; re-running never double counts', async () => {
    const ws = (await h().workspace('Shopify orders')).id;
    const args = ['sync-orders', '--file', SHOPIFY_ORDERS, '--format', 'shopify'];
    expect(await json(ws, [...args, '--dry-run'])).toEqual({ rows: 5, inserted: 5, updated: 0, skipped: 0, errors: [], dry_run: true });
    expect(await orderCount(ws)).toBe(0);
    expect(await contactCount(ws)).toBe(0);

    expect(await json(ws, args)).toEqual({ rows: 5, inserted: 5, updated: 0, skipped: 0, errors: [], dry_run: false });
    // The order's numeric id is its external id (the Shopify webhook's key), its Name the order number.
    expect(await orderOf(ws, '5523347865721')).toMatchObject({
      platform: 'shopify',
      order_number: '#1001',
      total_amount: 108.9,
      currency: 'EUR',
      status: 'paid',
      ordered_at: '2024-03-05T13:12:09.000Z',
      refunded_amount: 0,
      cancelled_at: null,
      items: [
        { external_id: null, title: 'Linen Shirt - S / White', quantity: 2, price: 49 },
        { external_id: null, title: 'Ceramic Mug', quantity: 1, price: 5 },
      ],
    });
    expect(await orderOf(ws, '5523347898489')).toMatchObject({ order_number: '#1002', status: 'voided', cancelled_at: '2024-03-07T10:02:45.000Z' });
    const partlyRefunded = await orderOf(ws, '5523347931257');
    expect(partlyRefunded).toMatchObject({ order_number: '#1003', status: 'partially_refunded', total_amount: 126.9, refunded_amount: 18 });
    expect(partlyRefunded.items.map((i) => [i.title, i.quantity, i.price])).toEqual([
      ['Linen Shirt - M / White', 1, 49],
      ['Ceramic Mug', 2, 18],
      ['Linen Shirt - L / Blue', 1, 36],
    ]);
    // The order after the one whose note spans two lines is read whole.
    expect(await orderOf(ws, '5523347964025')).toMatchObject({ order_number: '#1004', total_amount: 41.9, items: [{ title: 'Ceramic Mug', quantity: 2, price: 18 }] });
    expect(await orderOf(ws, '5523347996793')).toMatchObject({ order_number: '#1005', total_amount: 49, ordered_at: '2024-05-01T18:15:42.000Z' });

    // Revenue nets refunds and leaves cancelled orders out; one contact per address, whatever its case.
    const revenue = async () =>
      Promise.all(
        ['ann@example.com', 'bob@example.com', 'cleo@example.com'].map(async (email) => {
          const contact = await contactOf(ws, email);
          return [email, contact.lifetime_revenue, contact.orders_count, contact.source];
        }),
      );
    const expected = [
      ['ann@example.com', 217.8, 2, 'sync'],
      ['bob@example.com', 0, 1, 'sync'],
      ['cleo@example.com', 90.9, 2, 'sync'],
    ];
    expect(await revenue()).toEqual(expected);

    expect(await json(ws, args)).toEqual({ rows: 5, inserted: 0, updated: 0, skipped: 5, errors: [], dry_run: false });
    expect(await orderCount(ws)).toBe(5);
    expect(await revenue()).toEqual(expected);
  });

  it('sync rows: refunded_amount adds up to the total at most and never goes down; cancelled_at is sticky', async () => {
    const ws = (await h().workspace('Sync refunds')).id;
    const order = (fields: Record<string, unknown>) =>
      JSON.stringify({ email: 'ann@example.com', external_id: 'r-1', order_number: 'R1', total_amount: 100, currency: 'EUR', ordered_at: '2026-01-05T10:00:00Z', ...fields });
    const sync = async (name: string, ...rows: string[]) => json(ws, ['sync-orders', '--file', file(name, rows.join('\n'))]);
    const state = async () => {
      const { refunded_amount, cancelled_at } = await orderOf(ws, 'r-1');
      return { refunded_amount, cancelled_at, revenue: (await contactOf(ws, 'ann@example.com')).lifetime_revenue };
    };

    expect(await sync('refund-1.jsonl', order({ refunded_amount: '25.50' }))).toMatchObject({ inserted: 1 });
    expect(await state()).toEqual({ refunded_amount: 25.5, cancelled_at: null, revenue: 74.5 });
    // A row without the fields, or with a smaller refund (an older file), takes nothing back.
    expect(await sync('refund-2.jsonl', order({}), order({ refunded_amount: 10 }))).toMatchObject({ skipped: 2 });
    expect(await state()).toEqual({ refunded_amount: 25.5, cancelled_at: null, revenue: 74.5 });
    // More than the total is capped at the total.
    expect(await sync('refund-3.jsonl', order({ refunded_amount: 250 }))).toMatchObject({ updated: 1 });
    expect(await state()).toEqual({ refunded_amount: 100, cancelled_at: null, revenue: 0 });

    expect(await sync('cancel-1.jsonl', order({ cancelled_at: '2026-01-06T08:00:00Z' }))).toMatchObject({ updated: 1 });
    expect(await sync('cancel-2.jsonl', order({ cancelled_at: '2026-02-01T08:00:00Z' }), order({}))).toMatchObject({ skipped: 2 });
    expect((await state()).cancelled_at).toBe('2026-01-06T08:00:00.000Z');

    // A new order may arrive cancelled and refunded.
    expect(
      await json(ws, [
        'sync-orders',
        '--file',
        file('new-cancelled.jsonl', order({ external_id: 'r-2', refunded_amount: 30, cancelled_at: '2026-01-07T00:00:00Z' })),
      ]),
    ).toMatchObject({ inserted: 1 });
    expect(await orderOf(ws, 'r-2')).toMatchObject({ refunded_amount: 30, cancelled_at: '2026-01-07T00:00:00.000Z' });
    // Its only row refused: the summary, then exit 1.
    const refused = await emk(ws, ['sync-orders', '--file', file('bad-refund.jsonl', order({ external_id: 'r-3', refunded_amount: 'some' })), '--json']);
    expect(refused.code).toBe(1);
    const bad = JSON.parse(refused.stdout);
    expect(bad.errors).toEqual([{ line: 1, error: expect.stringMatching(/^invalid request: refunded_amount must be a number/) }]);
  });

  it('Shopify products export: a product of variant and image rows, stock and sale price; drafts skipped; --dry-run; re-running changes nothing', async () => {
    const ws = (await h().workspace('Shopify products')).id;
    const args = ['products', 'import', '--file', SHOPIFY_PRODUCTS, '--format', 'shopify', '--shop-domain', SHOPIFY_SHOP];
    expect(await json(ws, [...args, '--dry-run'])).toEqual({ rows: 3, inserted: 2, updated: 0, unchanged: 0, skipped: 1, errors: [], dry_run: true });
    expect((await catalog(ws)).size).toBe(0);

    expect(await json(ws, args)).toEqual({ rows: 3, inserted: 2, updated: 0, unchanged: 0, skipped: 1, errors: [], dry_run: false });
    const products = await catalog(ws);
    expect([...products.keys()].sort()).toEqual(['ceramic-mug', 'linen-shirt']);
    const cdn = 'https://cdn.shopify.com/s/files/1/0601/2345/6789/products';
    const variant = { external_id: null, url: null, compare_at_price: null, image_url: null };
    expect(products.get('linen-shirt')).toMatchObject({
      platform: 'shopify',
      source: `shopify:${SHOPIFY_SHOP}`,
      title: 'Linen Shirt',
      description: '<p>Breathable washed linen, cut for summer.</p>',
      url: `https://${SHOPIFY_SHOP}/products/linen-shirt`,
      image_url: `${cdn}/linen-shirt-white.jpg`,
      product_type: 'Shirts',
      categories: ['linen', 'summer'],
      price: 49,
      compare_at_price: 59,
      currency: 'USD',
      stock_qty: 7,
      in_stock: true,
      metadata: { handle: 'linen-shirt', vendor: 'Emk Demo' },
      variants: [
        { ...variant, sku: 'LS-S-WH', title: 'S / White', options: { Size: 'S', Color: 'White' }, price: 49, compare_at_price: 59, in_stock: true, stock_qty: 5, position: 1 },
        { ...variant, sku: 'LS-M-WH', title: 'M / White', options: { Size: 'M', Color: 'White' }, price: 49, compare_at_price: 59, in_stock: false, stock_qty: 0, position: 2 },
        { ...variant, sku: 'LS-L-BL', title: 'L / Blue', options: { Size: 'L', Color: 'Blue' }, price: 54, in_stock: true, stock_qty: 2, image_url: `${cdn}/linen-shirt-blue.jpg`, position: 3 },
      ],
    });
    // Not tracked by Shopify: always in stock, no quantity.
    expect(products.get('ceramic-mug')).toMatchObject({
      price: 18,
      in_stock: true,
      stock_qty: null,
      image_url: `${cdn}/ceramic-mug.jpg`,
      variants: [{ ...variant, sku: 'MUG-1', title: 'Default Title', options: { Title: 'Default Title' }, price: 18, in_stock: true, stock_qty: null, position: 1 }],
    });

    expect(await json(ws, args)).toEqual({ rows: 3, inserted: 0, updated: 0, unchanged: 2, skipped: 1, errors: [], dry_run: false });
    const human = await emk(ws, args);
    expect(human.stdout).toBe('3 rows: 0 inserted, 0 updated, 2 unchanged, 1 skipped (not published), 0 refused\n');
  });

  it('WooCommerce product export: variations join their product wherever they are; unpublished products and disabled variations are left out', async () => {
    const ws = (await h().workspace('WooCommerce products')).id;
    const args = ['products', 'import', '--file', WOO_PRODUCTS, '--format', 'woocommerce', '--shop-domain', WOO_SHOP];
    expect(await json(ws, [...args, '--dry-run'])).toEqual({ rows: 4, inserted: 3, updated: 0, unchanged: 0, skipped: 1, errors: [], dry_run: true });
    expect((await catalog(ws)).size).toBe(0);

    expect(await json(ws, args)).toEqual({ rows: 4, inserted: 3, updated: 0, unchanged: 0, skipped: 1, errors: [], dry_run: false });
    const products = await catalog(ws);
    expect([...products.keys()].sort()).toEqual(['15', '16', '17']);
    const uploads = `https://${WOO_SHOP}/wp-content/uploads/2024/03`;
    expect(products.get('15')).toMatchObject({
      platform: 'woocommerce',
      source: `woocommerce:${WOO_SHOP}`,
      title: 'Beanie',
      description: 'Warm knitted beanie.\nOne size fits most.',
      url: `https://${WOO_SHOP}/?p=15`,
      image_url: `${uploads}/beanie.jpg`,
      price: 18,
      compare_at_price: 20,
      in_stock: true,
      stock_qty: null,
      categories: ['Accessories'],
      product_type: 'simple',
      metadata: { sku: 'woo-beanie' },
      variants: [],
    });
    expect(products.get('16')).toMatchObject({
      title: 'Hoodie',
      product_type: 'variable',
      categories: ['Hoodies', 'Clothing'],
      // The lowest variant price, the summed stock, in stock when any variant is.
      price: 40,
      stock_qty: 7,
      in_stock: true,
      variants: [
        { external_id: '18', sku: 'woo-hoodie-blue-logo', title: 'Hoodie - Blue, Yes', options: { Color: 'Blue', Logo: 'Yes' }, price: 45, compare_at_price: null, in_stock: true, stock_qty: 7, image_url: `${uploads}/hoodie-blue.jpg`, position: 1 },
        { external_id: '20', sku: 'woo-hoodie-green', title: 'Hoodie - Green, No', options: { Color: 'Green', Logo: 'No' }, price: 40, compare_at_price: 42, in_stock: false, stock_qty: 0, image_url: `${uploads}/hoodie-green.jpg`, position: 2 },
      ],
    });
    expect(products.get('17')).toMatchObject({ title: 'Album', product_type: 'simple', price: 15, description: 'Twelve songs, lossless.' });

    expect(await json(ws, args)).toEqual({ rows: 4, inserted: 0, updated: 0, unchanged: 3, skipped: 1, errors: [], dry_run: false });

    // A variation whose product is not in the file is refused at its line; prices may use a decimal comma.
    const header = readFileSync(WOO_PRODUCTS, 'utf8').split('\n')[0];
    const orphan = file(
      'woo-orphan.csv',
      [header, '30,simple,,,Scarf,1,0,visible,,,,,taxable,,1,,,0,0,,,,,1,,,"12,50",,,,,,,,,,,,,0', '31,variation,,,Mitten - Red,1,0,visible,,,,,taxable,,1,,,0,0,,,,,1,,,9,,,,,,,id:99,,,,,,0'].join('\n'),
    );
    const result = await json(ws, ['products', 'import', '--file', orphan, '--format', 'woocommerce', '--shop-domain', WOO_SHOP]);
    expect(result).toMatchObject({ rows: 2, inserted: 1, errors: [{ line: 3, error: 'Parent id:99 is not a variable product of the file' }] });
    expect((await catalog(ws)).get('30')).toMatchObject({ title: 'Scarf', price: 12.5 });
  });

  it('--format needs --shop-domain for products, a known format, and a .csv file (exit 2, naming the flag)', async () => {
    const ws = (await h().workspace('Usage')).id;
    const noDomain = await emk(ws, ['products', 'import', '--file', SHOPIFY_PRODUCTS, '--format', 'shopify']);
    expect(noDomain.code).toBe(2);
    expect(noDomain.stderr).toMatch(/^emk: --shop-domain is required with --format shopify/);
    const badDomain = await emk(ws, ['products', 'import', '--file', SHOPIFY_PRODUCTS, '--format', 'shopify', '--shop-domain', 'not a domain']);
    expect(badDomain.code).toBe(2);
    expect(badDomain.stderr).toMatch(/^emk: --shop-domain must be a domain/);
    const unknown = await emk(ws, ['sync-orders', '--file', SHOPIFY_ORDERS, '--format', 'woocommerce']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^emk: --format must be shopify \(got "woocommerce"\)/);
    const jsonl = await emk(ws, ['contacts', 'import', '--file', join(FIXTURES, 'contacts.jsonl'), '--format', 'shopify']);
    expect(jsonl.code).toBe(2);
    expect(jsonl.stderr).toMatch(/^emk: --format shopify reads the platform's CSV export/);
    expect((await catalog(ws)).size).toBe(0);
  });

  it('Shopify customers export: contacts with their email-marketing consent and Shopify ids; the older Accepts Marketing column too', async () => {
    const ws = (await h().workspace('Shopify customers')).id;
    const args = ['contacts', 'import', '--file', SHOPIFY_CUSTOMERS, '--format', 'shopify'];
    expect(await json(ws, [...args, '--dry-run'])).toEqual({ created: 4, updated: 0, errors: [] });
    expect(await contactCount(ws)).toBe(0);

    expect(await json(ws, args)).toEqual({ created: 4, updated: 0, errors: [] });
    const ann = await contactOf(ws, 'ann@example.com');
    expect(ann).toMatchObject({
      subscription_status: 'subscribed',
      source: 'import',
      properties: { first_name: 'Ann', last_name: 'Archer', phone: '+33 6 12 34 56 78', shopify_customer_id: '7304567890123', tags: ['vip', 'newsletter'] },
    });
    expect((await h().services.contacts.consentHistory(ws, ann.id)).data).toMatchObject([{ status: 'subscribed', previous_status: null, origin: 'import' }]);
    expect(await contactOf(ws, 'bob@example.com')).toMatchObject({ subscription_status: 'non_subscribed', properties: { shopify_customer_id: '7304567922891' } });
    expect(await contactOf(ws, 'cleo@example.com')).toMatchObject({ subscription_status: 'subscribed', properties: { first_name: 'Cleo', tags: ['wholesale'] } });
    const dan = await contactOf(ws, 'dan@example.com');
    expect(dan.subscription_status).toBe('non_subscribed');
    expect(dan.properties).toEqual({ first_name: 'Dan', last_name: 'Diaz', shopify_customer_id: '7304567988427' });

    expect(await json(ws, args)).toEqual({ created: 0, updated: 0, errors: [] });

    const older = file(
      'customers-older.csv',
      'First Name,Last Name,Email,Accepts Marketing,Company,Address1,Address2,City,Province,Province Code,Country,Country Code,Zip,Phone,Total Spent,Total Orders,Tags,Note,Tax Exempt\n' +
        'Eve,Evans,eve@example.com,yes,,1 Main St,,Springfield,,,United States,US,12345,,10.00,1,,"Met at the\nspring fair",no\n' +
        'Phone,Only,,no,,,,,,,,,,+15555550100,0.00,0,,,no\n' +
        'Fay,Fox,fay@example.com,no,,,,,,,,,,,0.00,0,,,no\n',
    );
    expect(await json(ws, ['contacts', 'import', '--file', older, '--format', 'shopify'])).toEqual({
      created: 2,
      updated: 0,
      // The customer without an email is refused at its line: the one before spans two.
      errors: [{ line: 4, email: null, error: 'invalid request: email is required' }],
    });
    expect((await contactOf(ws, 'eve@example.com')).subscription_status).toBe('subscribed');
    expect((await contactOf(ws, 'fay@example.com')).subscription_status).toBe('non_subscribed');
  });

  it('a file that is not CSV (an unclosed quote) stops with the line the parser stopped at, told as it is (exit 1)', async () => {
    const ws = (await h().workspace('Broken CSV')).id;
    const broken = file('broken.csv', 'email,first_name\nann@example.com,"Ann\nbob@example.com,Bob\n');
    for (const command of [['contacts', 'import'], ['products', 'import'], ['sync-orders']]) {
      const result = await emk(ws, [...command, '--file', broken]);
      expect(result.code, command.join(' ')).toBe(1);
      expect(result.stderr, command.join(' ')).toContain('the file is not valid CSV at line 3');
    }
    expect((await h().services.contacts.list(ws, {}, page)).meta.total).toBe(0);
  });

  it('a refused row is named by its file line: the header is line 1, blank lines count, a quoted field counts the lines it spans (every import)', async () => {
    const ws = (await h().workspace('Lines')).id;
    // Line 1 header, 2 a row, 3 blank, 4–6 a row whose quoted note spans three lines, 7 blank, 8 refused.
    const contacts = file(
      'lines-contacts.csv',
      'email,properties.note\nann@example.com,fine\n\nbob@example.com,"one\ntwo\nthree"\n\nnot-an-address,x\n',
    );
    expect(await json(ws, ['contacts', 'import', '--file', contacts])).toEqual({
      created: 2,
      updated: 0,
      errors: [{ line: 8, email: 'not-an-address', error: 'invalid request: email must be an email address' }],
    });
    expect((await contactOf(ws, 'bob@example.com')).properties).toEqual({ note: 'one\ntwo\nthree' });

    // The same file with Windows line ends, through events import: --json and the --errors file agree.
    const events = file(
      'lines-events.csv',
      ['email,event_name,properties.note', 'ann@example.com,viewed,ok', '', 'bob@example.com,viewed,"a', 'b"', 'ghost@example.com,viewed,"c', '', 'd"', 'bob@example.com,,x'].join('\r\n'),
    );
    const errorsFile = join(inject('tmpDir'), `${dialect}-platform-lines-errors.csv`);
    const imported = await json(ws, ['events', 'import', '--file', events, '--errors', errorsFile]);
    expect(imported).toMatchObject({ rows: 4, processed: 2 });
    expect(imported.errors).toEqual([
      { line: 6, error: 'contact not found' },
      { line: 9, error: 'invalid request: event_name is required' },
    ]);
    expect(readFileSync(errorsFile, 'utf8').trim().split('\n')).toEqual([
      'line,email,event_name,error',
      '6,ghost@example.com,viewed,contact not found',
      '9,bob@example.com,,invalid request: event_name is required',
    ]);

    // A product import, refused rows after a multi-line description; and a JSON Lines file: its lines as they are.
    const products = file('lines-products.csv', 'external_id,title,description,price\np-1,Lamp,"Warm light.\nDimmable.",20\np-2,,"No title",5\n\np-3,Chair,,cheap\n');
    expect((await json(ws, ['products', 'import', '--file', products])).errors).toEqual([
      { line: 4, error: 'title is required' },
      { line: 6, error: 'price must be a number (got string)' },
    ]);
    const jsonl = file('lines-orders.jsonl', `\n${JSON.stringify({ email: 'ann@example.com' })}\n`);
    // Its only row refused: the summary, then exit 1.
    const refused = await emk(ws, ['sync-orders', '--file', jsonl, '--json']);
    expect([refused.code, refused.stderr]).toEqual([1, 'emk: the only row was refused\n']);
    expect(JSON.parse(refused.stdout).errors).toEqual([{ line: 2, error: expect.stringMatching(/^invalid request: external_id /) }]);

    // An order of Shopify's export is refused at the line of its first row, counted past the multi-line note.
    const lines = readFileSync(SHOPIFY_ORDERS, 'utf8').split('\n');
    expect(lines[9]).toMatch(/^#1005,/);
    lines[9] = lines[9]!.replaceAll('2024-05-01 20:15:42 +0200', 'last spring');
    lines[4] = lines[4]!.replace(',5523347931257,', ',,');
    const broken = file('lines-orders.csv', lines.join('\n'));
    expect((await json(ws, ['sync-orders', '--file', broken, '--format', 'shopify'])).errors).toEqual([
      { line: 5, error: 'Id is required (the numeric order id of Shopify’s orders export)' },
      { line: 10, error: 'invalid request: ordered_at must be an RFC 3339 time or YYYY-MM-DD HH:MM:SS' },
    ]);
  });
});
