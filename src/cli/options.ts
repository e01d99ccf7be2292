import { existsSync } from 'node:fs';
import { z } from 'zod';
import { UsageError } from '../domain/errors.js';
import { checkValue, emailSchema } from '../domain/shared/validate.js';
import { NATIVE_PLATFORMS } from '../domain/integrations/integration.schema.js';
import { USER_ROLES } from '../domain/users/user.schema.js';
import { formatOf } from './input/record-reader.js';

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

/** `--port`: 0 (any free port) to 65535. */
export const portFlag = (value: string) => flag('--port', wholeNumber(0, 65_535), value);

/** `--email`: an email address (a contact is found by it case-insensitively). */
export const emailFlag = (value: string) => flag('--email', emailSchema, value);

/** `--role` of `emk users add`: owner or member. */
export const roleFlag = (value: string) => flag('--role', z.enum(USER_ROLES, { error: `must be ${USER_ROLES.join(' or ')}` }), value);

/** `--platform` of `emk integrations create`: a platform whose own webhooks emk reads. */
export const platformFlag = (value: string) =>
  flag('--platform', z.enum(NATIVE_PLATFORMS, { error: `must be ${NATIVE_PLATFORMS.join(' or ')}` }), value.trim().toLowerCase());

/** `--file` of an import: a .csv or .jsonl file that exists. */
export function inputFile(path: string): string {
  formatOf(path);
  if (!existsSync(path)) throw new UsageError(`no such file: ${path}`);
  return path;
}

/** `--days` of `emk report deliverability`: 1 to 3650. */
export const daysFlag = (value: string) => flag('--days', wholeNumber(1, 3650), value);
