import { cell, consecutiveGroups, givenFields, textCell, type ExportRecord, type ExportRow } from '../shared/export-file.js';

/**
 * Shopify's orders export (Orders → Export, CSV) as rows of `emk sync-orders` (docs/platforms/shopify.md,
 * Importing history from export files). One row per line item; the rows of one order follow each other under
 * its `Name`, and the order's own fields are on its first row.
 */

/** Shopify's export time `2024-03-05 14:12:09 -0500` as RFC 3339; other text as it is (the sync names the field). */
export function shopifyExportTime(text: string): string {
  const match = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}(?::\d{2})?)\s*([+-]\d{2}):?(\d{2})$/.exec(text);
  return match ? `${match[1]}T${match[2]}${match[3]}:${match[4]}` : text;
}

/**
 * One order from its rows. `Id` is the order's numeric id, the key the Shopify webhook stores orders under too,
 * so history and live orders are one order; the export names no product of a line item (external_id null).
 */
function orderOf(rows: ExportRow[]): ExportRecord {
  const line = rows[0]!.line;
  // The order's fields are on its first row; read from whichever row has them.
  const field = (column: string) => rows.map((row) => textCell(row, column)).find((value) => value !== null) ?? null;
  const name = field('Name');
  if (name === null) return { line, error: 'Name is required (the order number, such as #1001)' };
  const id = field('Id');
  if (id === null) return { line, error: 'Id is required (the numeric order id of Shopify’s orders export)' };
  const time = (column: string) => {
    const value = field(column);
    return value === null ? null : shopifyExportTime(value);
  };
  const items = rows
    .filter((row) => cell(row, 'Lineitem name') !== null || cell(row, 'Lineitem quantity') !== null)
    .map((row) => givenFields({ title: cell(row, 'Lineitem name'), quantity: cell(row, 'Lineitem quantity'), price: cell(row, 'Lineitem price') }));
  return {
    line,
    record: givenFields({
      email: field('Email'),
      // A point-of-sale sale has no email: its contact is found by phone (docs/platforms/README.md, Orders without an email).
      phone: field('Phone') ?? field('Billing Phone'),
      external_id: id,
      order_number: name,
      total_amount: field('Total'),
      currency: field('Currency'),
      status: field('Financial Status'),
      ordered_at: time('Created at'),
      items,
      platform: 'shopify',
      refunded_amount: field('Refunded Amount'),
      cancelled_at: time('Cancelled at'),
    }),
  };
}

/** The orders of an export file, one record per order, at the line of its first row. */
export async function* shopifyOrdersExport(rows: AsyncIterable<ExportRow>): AsyncGenerator<ExportRecord> {
  for await (const group of consecutiveGroups(rows, (row) => cell(row, 'Name'))) yield orderOf(group.rows);
}
