import { z } from 'zod';

export const DEFAULT_PER_PAGE = 50;
export const MAX_PER_PAGE = 500;
/** No list holds more pages than this at the smallest page size; a bigger `page` is a mistake, said so. */
const MAX_PAGE = 1_000_000_000;

/** `page` is 1-based; `perPage` above the maximum is clamped, not refused. */
export const pagingSchema = z.object({
  page: z.coerce.number().min(1).max(MAX_PAGE, `must be at most ${MAX_PAGE}`).int().default(1),
  // Clamped before the integer check, so a huge perPage is clamped too, not refused.
  perPage: z.coerce
    .number()
    .transform((n) => Math.min(n, MAX_PER_PAGE))
    .pipe(z.number().int().min(1))
    .default(DEFAULT_PER_PAGE),
});

export type Paging = z.infer<typeof pagingSchema>;

export interface Page<T> {
  data: T[];
  meta: { page: number; perPage: number; total: number };
}

export function offsetOf(paging: Paging): number {
  return (paging.page - 1) * paging.perPage;
}

/** The management API's list body. */
export function toPage<T>(data: T[], total: number, paging: Paging): Page<T> {
  return { data, meta: { page: paging.page, perPage: paging.perPage, total } };
}
