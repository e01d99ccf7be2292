import { cell, consecutiveGroups, givenFields, listCell, yesNo, type ExportRecord, type ExportRow } from '../shared/export-file.js';
import { numericText } from '../shared/numbers.js';

/**
 * Shopify's products export (Products → Export, CSV) as catalog products of the shop (docs/platforms/shopify.md,
 * Importing history from export files). The rows of one product follow each other under its `Handle`: the first
 * holds the product's fields and its first variant, the next ones further variants (Option values, Variant
 * columns) or further images only (Image Src, Image Position).
 */

const OPTIONS = [1, 2, 3] as const;

/** A number the cell holds, else null (the product's own validation then names the field). */
const amountOf = (value: string | null): number | null => {
  const number = numericText(value);
  return typeof number === 'number' ? number : null;
};

const isVariantRow = (row: ExportRow) =>
  cell(row, 'Option1 Value') !== null || cell(row, 'Variant SKU') !== null || cell(row, 'Variant Price') !== null;

/**
 * Stock as Shopify keeps it: a variant whose `Variant Inventory Tracker` is blank is not tracked and can always
 * be bought; a tracked one has its quantity, and can be bought when it has some or its policy is `continue`
 * (sell when out of stock). An export without the tracker column says nothing.
 */
function stockOf(row: ExportRow): { in_stock: boolean | null; stock_qty: string | null } {
  if (!('Variant Inventory Tracker' in row.cells)) return { in_stock: null, stock_qty: null };
  if (cell(row, 'Variant Inventory Tracker') === null) return { in_stock: true, stock_qty: null };
  const quantity = cell(row, 'Variant Inventory Qty');
  const units = amountOf(quantity);
  const sellsWhenOut = cell(row, 'Variant Inventory Policy')?.toLowerCase() === 'continue';
  return { in_stock: sellsWhenOut || (units === null ? null : units > 0), stock_qty: quantity };
}

/** A variant row: its options named as on the product's first row (`Size: M`), title as Shopify writes it (`M / Red`). */
function variantOf(row: ExportRow, optionNames: Array<string | null>) {
  const options: Record<string, string> = {};
  const values: string[] = [];
  OPTIONS.forEach((n, i) => {
    const value = cell(row, `Option${n} Value`);
    if (value === null) return;
    values.push(value);
    options[optionNames[i] ?? `Option${n}`] = value;
  });
  return givenFields({
    sku: cell(row, 'Variant SKU'),
    title: values.length > 0 ? values.join(' / ') : null,
    options,
    price: cell(row, 'Variant Price'),
    compare_at_price: cell(row, 'Variant Compare At Price'),
    ...stockOf(row),
    image_url: cell(row, 'Variant Image'),
  });
}

/** The product's image: the one at the lowest `Image Position` (the first listed when none has a position). */
function imageOf(rows: ExportRow[]): string | null {
  const images = rows
    .map((row, i) => ({ src: cell(row, 'Image Src'), position: amountOf(cell(row, 'Image Position')) ?? Number.MAX_SAFE_INTEGER + i }))
    .filter((image): image is { src: string; position: number } => image.src !== null)
    .sort((a, b) => a.position - b.position);
  return images[0]?.src ?? null;
}

/**
 * One product from its rows. The export carries no product id: the handle is the external id (and
 * `metadata.handle`), so that the shop's first webhook for the product can adopt the row. A product whose
 * `Status` is not `active` (draft, archived), or unpublished in an export without `Status`, is skipped.
 */
function productOf(handle: string, rows: ExportRow[], shopDomain: string): ExportRecord {
  const first = rows[0]!;
  const line = first.line;
  if (handle === '') return { line, error: 'Handle is required' };
  const status = cell(first, 'Status')?.toLowerCase() ?? null;
  if (status !== null && status !== 'active') return { line, skipped: `status ${status}` };
  if (status === null && yesNo(cell(first, 'Published')) === false) return { line, skipped: 'not published' };

  const optionNames = OPTIONS.map((n) => cell(first, `Option${n} Name`));
  const variantRows = rows.filter(isVariantRow);
  // The sale shown beside the product's price (the lowest variant price above 0) is that variant's.
  const cheapest = variantRows
    .map((row) => ({ price: amountOf(cell(row, 'Variant Price')), compareAt: amountOf(cell(row, 'Variant Compare At Price')) }))
    .filter((v): v is { price: number; compareAt: number | null } => v.price !== null && v.price > 0)
    .sort((a, b) => a.price - b.price)[0];
  const compareAt = cheapest && cheapest.compareAt !== null && cheapest.compareAt > cheapest.price ? cheapest.compareAt : null;
  return {
    line,
    record: givenFields({
      external_id: handle,
      title: cell(first, 'Title'),
      description: cell(first, 'Body (HTML)'),
      url: `https://${shopDomain}/products/${encodeURIComponent(handle)}`,
      image_url: imageOf(rows),
      product_type: cell(first, 'Type'),
      categories: listCell(cell(first, 'Tags')),
      compare_at_price: compareAt,
      variants: variantRows.map((row) => variantOf(row, optionNames)),
      metadata: givenFields({ handle, vendor: cell(first, 'Vendor') }),
    }),
  };
}

/** The products of an export file, one record per handle, at the line of its first row. */
export async function* shopifyProductsExport(rows: AsyncIterable<ExportRow>, context: { shopDomain: string }): AsyncGenerator<ExportRecord> {
  for await (const group of consecutiveGroups(rows, (row) => cell(row, 'Handle'))) yield productOf(group.key, group.rows, context.shopDomain);
}
