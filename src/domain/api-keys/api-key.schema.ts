import { z } from 'zod';
import { text } from '../shared/validate.js';
import type { ApiKey, CreatedApiKey } from './api-key-service.js';

/** POST /api/v1/api-keys: an optional label. */
export const createApiKeySchema = z.object({ name: text(200).optional() }).optional();

/** The API key record: its prefix, never the key. */
export const apiKeyRecordSchema = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string(),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
}) satisfies z.ZodType<ApiKey>;

/** A new key: the record and the whole key, shown once. */
export const createdApiKeySchema = apiKeyRecordSchema.extend({ key: z.string() }) satisfies z.ZodType<CreatedApiKey>;
