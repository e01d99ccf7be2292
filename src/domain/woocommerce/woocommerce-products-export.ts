import { cell, givenFields, type ExportRecord, type ExportRow } from '../shared/export-file.js';
import { decodeHtmlEntities } from '../shared/html-entities.js';

/**
 * WooCommerce's built-in product exporter (Products → Export, CSV) as catalog products of the shop
 * (docs/platforms/woocommerce.md, Importing history from export files). Every product and every variation is a
 * row of its own, in id order: a variation names its product in `Parent` (`id:12`, or the product's SKU) and may
 * come after other products, so the file is read twice: first which variable product awaits how many
 * variations, then the products, each given out once its variations are in (only those are held).
 */

/** WooCommerce joins list values with `, ` and escapes a comma inside a value as `\,`. */
const wooList = (value: string | null): string[] =>
  value === null
    ? []
    : value
        .split(/(?<!\\),/)
        .map((entry) => entry.replace(/\\,/g, ',').trim())
        .filter(Boolean);

/**
 * A name as the exporter writes it: as WordPress stores it, HTML-encoded (`Tea &amp; Cake`, `Hoodie &ndash; Blue`):
 * the text a shopper sees. Lists are split before their entries are decoded, so a `&gt;` in a category name
 * never splits its path.
 */
function nameCell(row: ExportRow, column: string): string | null {
  const name = cell(row, column);
  return name === null ? null : decodeHtmlEntities(name);
}

/** `simple`, `variable`, `variation`, … (the exporter adds `downloadable`, `virtual` after the type). */
const typeOf = (row: ExportRow) => wooList(cell(row, 'Type'))[0]?.toLowerCase() ?? null;

/** Prices are written with the shop's decimal separator (`19,99` in many shops). */
const decimal = (value: string | null) => (value !== null && /^-?\d+,\d+$/.test(value) ? value.replace(',', '.') : value);

/** Descriptions are written on one line: a line break as `\n`, a written `\n` as `\\n`. */
const description = (value: string | null) =>
  value === null ? null : value.replace(/\\\\n|\\n/g, (escape) => (escape === '\\n' ? '\n' : '\\n'));

/** `1` in stock, `0` out of stock, `backorder` can be ordered. */
function inStock(row: ExportRow): boolean | null {
  const status = cell(row, 'In stock?')?.toLowerCase();
  if (status === '1' || status === 'backorder') return true;
  return status === '0' ? false : null;
}

/** What a product or a variation sells for: the sale price while on sale, with the regular one beside it. */
function pricing(row: ExportRow) {
  const sale = decimal(cell(row, 'Sale price'));
  const regular = decimal(cell(row, 'Regular price'));
  return { price: sale ?? regular, compare_at_price: sale === null ? null : regular };
}

/** The fields a product and a variation share. `Stock` is blank when stock is not managed, `parent` when the product's. */
function common(row: ExportRow) {
  const stock = cell(row, 'Stock');
  return {
    ...pricing(row),
    in_stock: inStock(row),
    stock_qty: stock === null || stock.toLowerCase() === 'parent' ? null : stock,
    image_url: wooList(cell(row, 'Images'))[0] ?? null,
  };
}

/** A variation's attribute values by attribute name (`Attribute 1 name`, `Attribute 1 value(s)`, …); blank is "any". */
function optionsOf(row: ExportRow): Record<string, string> {
  const options: Record<string, string> = {};
  for (let n = 1; `Attribute ${n} name` in row.cells; n++) {
    const name = nameCell(row, `Attribute ${n} name`);
    const value = nameCell(row, `Attribute ${n} value(s)`);
    if (name !== null && value !== null) options[name] = value;
  }
  return options;
}

const variantOf = (row: ExportRow) =>
  givenFields({ external_id: cell(row, 'ID'), sku: cell(row, 'SKU'), title: nameCell(row, 'Name'), options: optionsOf(row), ...common(row) });

/**
 * A product, with its variations when it is variable. `Published` other than 1 (draft -1, private 0, pending 2)
 * is skipped; so are variations that are not enabled. The export holds no permalink: the product's URL is
 * WordPress's short link `https://<shop>/?p=<ID>`, which leads to it. Categories are written as paths
 * (`Clothing > Shirts`): each path is the category at its end.
 */
function productOf(row: ExportRow, variations: ExportRow[], shopDomain: string): ExportRecord {
  const line = row.line;
  const id = cell(row, 'ID');
  if (id === null) return { line, error: 'ID is required' };
  const published = cell(row, 'Published');
  if (published !== '1') return { line, skipped: published === '-1' ? 'draft' : 'not published' };
  const type = typeOf(row);
  return {
    line,
    record: givenFields({
      external_id: id,
      title: nameCell(row, 'Name'),
      description: description(cell(row, 'Description') ?? cell(row, 'Short description')),
      url: `https://${shopDomain}/?p=${encodeURIComponent(id)}`,
      ...common(row),
      categories: wooList(cell(row, 'Categories')).map((path) => decodeHtmlEntities(path.split('>').pop()!.trim())),
      product_type: type,
      metadata: givenFields({ sku: cell(row, 'SKU') }),
      variants: type === 'variable' ? variations.filter((v) => cell(v, 'Published') === '1').map(variantOf) : null,
    }),
  };
}

/** The product a variation's `Parent` names, by `id:N` or by the product's SKU. */
const parentId = (reference: string | null, idOfSku: Map<string, string>) =>
  reference === null ? null : reference.startsWith('id:') ? reference.slice(3).trim() : (idOfSku.get(reference) ?? null);

/** The products of an export file, one record per product (a variable one with its variations), at its line. */
export async function* wooCommerceProductsExport(
  readRows: () => AsyncIterable<ExportRow>,
  context: { shopDomain: string },
): AsyncGenerator<ExportRecord> {
  // First pass: the ids of variable products by SKU, and how many variations name each reference.
  const idOfSku = new Map<string, string>();
  const variationsOf = new Map<string, number>();
  for await (const row of readRows()) {
    const type = typeOf(row);
    const sku = cell(row, 'SKU');
    const id = cell(row, 'ID');
    if (type === 'variable' && sku !== null && id !== null) idOfSku.set(sku, id);
    const reference = cell(row, 'Parent');
    if (type === 'variation' && reference !== null) variationsOf.set(reference, (variationsOf.get(reference) ?? 0) + 1);
  }
  const expected = new Map<string, number>();
  for (const [reference, count] of variationsOf) {
    const id = parentId(reference, idOfSku);
    if (id !== null) expected.set(id, (expected.get(id) ?? 0) + count);
  }

  // Second pass: a variable product is held until its variations are in.
  const pending = new Map<string, { product: ExportRow | null; variations: ExportRow[] }>();
  const entryOf = (id: string) => {
    let entry = pending.get(id);
    if (!entry) pending.set(id, (entry = { product: null, variations: [] }));
    return entry;
  };
  const completed = (id: string): ExportRecord | null => {
    const entry = pending.get(id)!;
    if (entry.product === null || entry.variations.length < (expected.get(id) ?? 0)) return null;
    pending.delete(id);
    return productOf(entry.product, entry.variations, context.shopDomain);
  };
  for await (const row of readRows()) {
    const type = typeOf(row);
    const id = cell(row, 'ID');
    if (type === 'variation') {
      const parent = parentId(cell(row, 'Parent'), idOfSku);
      if (parent === null) {
        const reference = JSON.stringify(cell(row, 'Parent') ?? '');
        yield { line: row.line, error: `Parent must name a variable product of the file (id:<ID> or its SKU; got ${reference})` };
        continue;
      }
      entryOf(parent).variations.push(row);
      const product = completed(parent);
      if (product) yield product;
    } else if (type === 'variable' && id !== null) {
      entryOf(id).product = row;
      const product = completed(id);
      if (product) yield product;
    } else {
      yield productOf(row, [], context.shopDomain);
    }
  }
  // What is still held names a product the file does not hold (or changed between the two passes).
  for (const entry of pending.values()) {
    if (entry.product) yield productOf(entry.product, entry.variations, context.shopDomain);
    else {
      for (const variation of entry.variations) {
        yield { line: variation.line, error: `Parent ${cell(variation, 'Parent')} is not a variable product of the file` };
      }
    }
  }
}
