/**
 * The shop platforms' export files (Shopify's orders, products and customers exports, WooCommerce's product
 * exporter) as emk reads them: CSV rows of text cells, turned into the rows of emk's own imports (a sync order,
 * a catalog product, a contact) by the platform's reader (`shopify/`, `woocommerce/`). The readers are pure: the
 * command line hands them the file's rows and writes what they yield through the import's domain function.
 */

/** A data row of an export file: its cells by column name, at the line an editor shows it on. */
export interface ExportRow {
  line: number;
  cells: Record<string, string>;
}

/** What one record of the file (an order, a product: one or several rows) becomes, at the line it starts on. */
export type ExportRecord =
  | { line: number; record: Record<string, unknown> }
  /** Refused: the import reports it with its line. */
  | { line: number; error: string }
  /** Left out on purpose (a draft product): counted, not an error. */
  | { line: number; skipped: string };

/** A cell's text, trimmed; null when the column is absent or the cell blank. */
export function cell(row: ExportRow, column: string): string | null {
  const value = row.cells[column]?.trim();
  return value ? value : null;
}

/** The first of these columns with a value (older and newer exports name some columns differently). */
export function firstCell(row: ExportRow, columns: string[]): string | null {
  for (const column of columns) {
    const value = cell(row, column);
    if (value !== null) return value;
  }
  return null;
}

/**
 * A cell the platform wrote with a leading apostrophe so that spreadsheets keep it text (Shopify's customer ids,
 * phone numbers and zip codes: `'9013808660771`).
 */
export function textCell(row: ExportRow, column: string): string | null {
  const value = cell(row, column);
  return value?.startsWith("'") ? value.slice(1).trim() || null : value;
}

/** `yes`/`true`/`1` → true, `no`/`false`/`0` → false; anything else (blank included) → null. */
export function yesNo(value: string | null): boolean | null {
  const word = value?.toLowerCase();
  if (word === 'yes' || word === 'true' || word === '1') return true;
  if (word === 'no' || word === 'false' || word === '0') return false;
  return null;
}

/** A comma-separated list (`vip, wholesale`): trimmed entries, blanks left out. */
export const listCell = (value: string | null): string[] =>
  value === null ? [] : value.split(',').map((entry) => entry.trim()).filter(Boolean);

/** The fields a record was given: a blank cell (null) is a field not sent, which the import reads as such. */
export const givenFields = (fields: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== null));

/**
 * Consecutive rows with the same key, as one group (an order's line items, a product's variant and image rows):
 * only the group being read is held, so memory stays flat whatever the file's size. A row whose key is blank is
 * a group of its own, under the key ''.
 */
export async function* consecutiveGroups(
  rows: AsyncIterable<ExportRow>,
  keyOf: (row: ExportRow) => string | null,
): AsyncGenerator<{ key: string; rows: ExportRow[] }> {
  let current: { key: string; rows: ExportRow[] } | null = null;
  for await (const row of rows) {
    const key = keyOf(row) ?? '';
    if (current && key !== '' && key === current.key) {
      current.rows.push(row);
      continue;
    }
    if (current) yield current;
    current = { key, rows: [row] };
  }
  if (current) yield current;
}
