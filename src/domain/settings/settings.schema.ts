import { z } from 'zod';
import { emailSchema, looseText } from '../shared/validate.js';

/** Longest attribution window a workspace may set, in days. */
export const MAX_WINDOW_DAYS = 365;
/** The column is a 32-bit integer on PostgreSQL. */
const MAX_CONTACT_LIMIT = 2_147_483_647;

const unknownFields = (issue: z.core.$ZodRawIssue) =>
  issue.code === 'unrecognized_keys' ? `unknown field ${(issue.keys as string[]).join(', ')}` : undefined;

const windowDays = z
  .number()
  .min(0, 'must be at least 0')
  .max(MAX_WINDOW_DAYS, `must be at most ${MAX_WINDOW_DAYS}`)
  .int();

/**
 * PATCH /api/v1/settings (docs/api/settings-and-integrations.md): only the fields sent change; `null` clears a nullable one. Unknown
 * fields are refused, so a misspelt setting is not silently ignored.
 */
export const updateSettingsSchema = z.strictObject(
  {
    click_window_days: windowDays.optional(),
    open_window_days: windowDays.optional(),
    contact_limit: z.number().min(0, 'must be at least 0').max(MAX_CONTACT_LIMIT, `must be at most ${MAX_CONTACT_LIMIT}`).int().nullable().optional(),
    sender: z
      .strictObject(
        {
          from_email: emailSchema.nullable().optional(),
          from_name: looseText(200).nullable().optional(),
        },
        { error: unknownFields },
      )
      .optional(),
  },
  { error: unknownFields },
);
export type UpdateSettingsInput = z.infer<typeof updateSettingsSchema>;

export interface Sender {
  from_email: string | null;
  from_name: string | null;
}

/** How the sender is stored (a JSON column): re-checked on the way out. */
export const storedSenderSchema = z
  .object({ from_email: z.string().nullable().catch(null), from_name: z.string().nullable().catch(null) })
  .partial()
  .catch({});

/** A workspace's settings: attribution windows, the contact limit (null = unlimited) and the sender. */
export interface Settings {
  click_window_days: number;
  open_window_days: number;
  contact_limit: number | null;
  sender: Sender;
}

/** The settings record, as a schema: what the API documents for replies. */
export const settingsRecordSchema = z.object({
  click_window_days: z.number().int(),
  open_window_days: z.number().int(),
  contact_limit: z.number().int().nullable(),
  sender: z.object({ from_email: z.string().nullable(), from_name: z.string().nullable() }),
}) satisfies z.ZodType<Settings>;
