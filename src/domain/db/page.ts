import type { Knex } from 'knex';
import { offsetOf, type Paging } from '../shared/paging.js';

/** The lists' usual order: newest first, the id breaking ties so pages neither skip nor repeat rows. */
export const NEWEST_FIRST: Array<{ column: string; order: 'asc' | 'desc' }> = [
  { column: 'created_at', order: 'desc' },
  { column: 'id', order: 'desc' },
];

/**
 * One page of a filtered list query and the total it pages through: `{rows, total}` for the management
 * API's `{data, meta}` lists. `base` carries the filters; `orderBy` should end in a unique column so pages
 * neither skip nor repeat rows.
 */
export async function selectPage<Row>(
  base: Knex.QueryBuilder,
  orderBy: Array<{ column: string; order: 'asc' | 'desc' }>,
  paging: Paging,
  fromRow: (raw: Record<string, unknown>) => Row,
): Promise<{ rows: Row[]; total: number }> {
  // The count drops the page's columns: `base` may select some (a join's), which COUNT cannot sit beside.
  const [{ total }] = (await base.clone().clearSelect().count({ total: '*' })) as [{ total: number | string }];
  const rows = await base.orderBy(orderBy).limit(paging.perPage).offset(offsetOf(paging));
  return { rows: rows.map(fromRow), total: Number(total) };
}
