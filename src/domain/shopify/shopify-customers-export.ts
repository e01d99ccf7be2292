import { cell, firstCell, givenFields, listCell, textCell, yesNo, type ExportRecord, type ExportRow } from '../shared/export-file.js';

/**
 * Shopify's customers export (Customers → Export, CSV) as rows of `emk contacts import`, with its semantics
 * (docs/platforms/shopify.md, Importing history from export files). Newer exports name the email-marketing
 * column `Accepts Email Marketing`, older ones `Accepts Marketing`; `yes` is subscribed, anything else
 * non_subscribed (the export does not tell an unsubscribe from never subscribing).
 */
function contactOf(row: ExportRow): ExportRecord {
  const accepts = yesNo(firstCell(row, ['Accepts Email Marketing', 'Accepts Marketing']));
  const tags = listCell(cell(row, 'Tags'));
  return {
    line: row.line,
    record: givenFields({
      email: cell(row, 'Email'),
      first_name: cell(row, 'First Name'),
      last_name: cell(row, 'Last Name'),
      phone: textCell(row, 'Phone') ?? textCell(row, 'Default Address Phone'),
      subscription_status: accepts ? 'subscribed' : 'non_subscribed',
      properties: givenFields({ shopify_customer_id: textCell(row, 'Customer ID'), tags: tags.length > 0 ? tags : null }),
    }),
  };
}

/** The customers of an export file, one contact row per line. */
export async function* shopifyCustomersExport(rows: AsyncIterable<ExportRow>): AsyncGenerator<ExportRecord> {
  for await (const row of rows) yield contactOf(row);
}
