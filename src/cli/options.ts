import { existsSync } from 'node:fs';
import { z } from 'zod';
import { UsageError } from '../domain/errors.js';
import { checkValue, emailSchema } from '../domain/shared/validate.js';
import { domainSchema, NATIVE_PLATFORMS } from '../domain/integrations/integration.schema.js';
import { USER_ROLES } from '../domain/users/user.schema.js';
import { formatOf } from './input/record-reader.js';
import { DEFAULT_PER_PAGE, pagingSchema, type Paging } from '../domain/shared/paging.js';

/** A flag's value through a zod schema; a bad one is a usage error (exit 2) naming the flag. */
function flag<S extends z.ZodType>(name: string, schema: S, value: string): z.output<S> {
  const checked = checkValue(schema, value.trim() === '' ? undefined : value);
  if (!checked.success) throw new UsageError(`${name} ${checked.problem.replace(/^body /, '')} (got ${JSON.stringify(value)})`);
  return checked.data;
}

const wholeNumber = (min: number, max: number) =>
  z.coerce.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`).int('must be a whole number');

/** `--concurrency`: chunks in flight, 1 to 64. */
export const concurrencyFlag = (value: string) => flag('--concurrency', wholeNumber(1, 64), value);

/** `--max-errors` of an import: the refused rows it tolerates, 0 or more. */
export const maxErrorsFlag = (value: string) => flag('--max-errors', wholeNumber(0, Number.MAX_SAFE_INTEGER), value);

/** `--port`, `--metrics-port`: 0 (any free port) to 65535. */
export const portFlag = (value: string) => flag('--port', wholeNumber(0, 65_535), value);
export const metricsPortFlag = (value: string) => flag('--metrics-port', wholeNumber(0, 65_535), value);

/** `--email`: an email address (a contact is found by it case-insensitively). */
export const emailFlag = (value: string) => flag('--email', emailSchema, value);

/** `--role` of `emk users add`: owner or member. */
export const roleFlag = (value: string) => flag('--role', z.enum(USER_ROLES, { error: `must be ${USER_ROLES.join(' or ')}` }), value);

/** `--platform` of `emk integrations create`: a platform whose own webhooks emk reads. */
export const platformFlag = (value: string) =>
  flag('--platform', z.enum(NATIVE_PLATFORMS, { error: `must be ${NATIVE_PLATFORMS.join(' or ')}` }), value.trim().toLowerCase());

/** The platforms whose export files an import reads (`--format`). */
export type ExportFormat = 'shopify' | 'woocommerce';

/** `--format` of an import: one of the export formats it reads; absent, the file is emk's own CSV or JSON Lines. */
export function formatFlag<F extends ExportFormat>(value: string | undefined, formats: readonly [F, ...F[]]): F | null {
  return value === undefined ? null : flag('--format', z.enum(formats, { error: `must be ${formats.join(' or ')}` }), value);
}

/** `--shop-domain` of an import of a shop's export: the shop's host (`emk-demo.myshopify.com`), needed with `--format`. */
export function shopDomainFlag(value: string | undefined, format: ExportFormat): string {
  if (value === undefined) throw new UsageError(`--shop-domain is required with --format ${format} (the shop's domain, such as shop.example.com)`);
  return flag('--shop-domain', domainSchema, value);
}

/** `--file` of an import: a .csv or .jsonl file that exists (a platform's export: a .csv file). */
export function inputFile(path: string, format: ExportFormat | null = null): string {
  if (formatOf(path) !== 'csv' && format !== null) throw new UsageError(`--format ${format} reads the platform's CSV export: ${path} is not a .csv file`);
  if (!existsSync(path)) throw new UsageError(`no such file: ${path}`);
  return path;
}

/** `--days` of `emk report deliverability`: 1 to 3650. */
export const daysFlag = (value: string) => flag('--days', wholeNumber(1, 3650), value);

/** `--page` and `--per-page` of a list: as the API's `page` and `perPage` (per page above 500 is clamped). */
export const pagingFlags = (options: { page?: string; perPage?: string }): Paging => ({
  page: options.page === undefined ? 1 : flag('--page', pagingSchema.shape.page, options.page),
  perPage: options.perPage === undefined ? DEFAULT_PER_PAGE : flag('--per-page', pagingSchema.shape.perPage, options.perPage),
});
