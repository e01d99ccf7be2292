import type { FastifySchema, FastifySchemaCompiler } from 'fastify';
import { z } from 'zod';
import { ValidationError } from '../../domain/errors.js';
import { checkInputAhead } from '../../domain/shared/validate.js';

/**
 * How a route describes itself: its params, query, body and replies as the domain's zod schemas, its tag (the
 * noun) and its credential. The same schemas validate the request here (in the domain's words, so a 400 says
 * exactly what the domain would) and produce the OpenAPI document (`GET /openapi.json`).
 *
 * The domain still parses its input itself — the CLI calls the same functions — and its schemas transform
 * (trimmed text, canonical event names, times as epoch ms). So validation here checks and hands the request
 * on unchanged; the domain's parse is the one whose output is used, taken from this check when the schema is the
 * same (no second parse of a body on the hot routes).
 */

/** The credentials of the spec's Authentication table, a user's access token and Segment's write key, as OpenAPI security schemes. */
export const SECURITY_SCHEMES = {
  apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'Workspace API key (`emk_…`): the management API.' },
  accessToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: "A user's access token from /api/v1/auth/*: the management API of the workspace the user owns, like its API key.",
  },
  integrationKey: {
    type: 'http',
    scheme: 'bearer',
    description: "A Website integration's own key (`whk_…`): the integration webhook only.",
  },
  platformSignature: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Shopify-Hmac-Sha256',
    description:
      "Shopify and WooCommerce: the base64 HMAC-SHA256 of the raw body with the integration's secret, in `X-Shopify-Hmac-Sha256` or `X-WC-Webhook-Signature`.",
  },
  siteId: {
    type: 'apiKey',
    in: 'query',
    name: 's',
    description: 'The workspace site id: query `s` of /emk.js; the Collect API carries it as `site_id` in the body.',
  },
  segmentWriteKey: {
    type: 'http',
    scheme: 'basic',
    description: 'Segment-compatible ingest (`/v1/…`): the workspace site id as the Basic user with an empty password (or `writeKey` in the body).',
  },
  metricsToken: {
    type: 'http',
    scheme: 'bearer',
    description: '`EMK_METRICS_TOKEN`, when set: `GET /metrics` only (unset: the metrics ask for no credential).',
  },
  consoleSession: {
    type: 'apiKey',
    in: 'cookie',
    name: 'emk_console',
    description: 'The console (`/console/…`): the session cookie its sign-in form sets (docs/console.md).',
  },
} as const;

/** What a route accepts: the management API (`apiKey`) takes the workspace's key or its user's access token. */
const SECURITY = {
  apiKey: [{ apiKey: [] }, { accessToken: [] }],
  integrationKey: [{ integrationKey: [] }],
  platformSignature: [{ platformSignature: [] }],
  siteId: [{ siteId: [] }],
  segmentWriteKey: [{ segmentWriteKey: [] }],
  // `{}`: no credential at all, when the token is not set.
  metricsToken: [{ metricsToken: [] }, {}],
  consoleSession: [{ consoleSession: [] }],
  none: [],
} as const;

export type Credential = keyof typeof SECURITY;

/** Schemas that document a request without validating it (the webhook never refuses a body over its shape). */
const documentOnly = new WeakSet<object>();
export function describedOnly<S extends z.ZodType>(schema: S): S {
  documentOnly.add(schema);
  return schema;
}

/** Bodies made of several domain schemas, documented as one object and checked part by part. */
const partsOf = new WeakMap<z.ZodType, z.ZodObject[]>();

/**
 * A body the domain reads as several inputs (the Collect API: `site_id` for the workspace, the rest for the
 * event): one object in the OpenAPI document, checked part by part in order, which names the same first fault
 * as checking the whole, and leaves each part's output for the domain's own parse of it.
 */
export function bodyOf(first: z.ZodObject, ...rest: z.ZodObject[]): z.ZodObject {
  const body = rest.reduce<z.ZodObject>((whole, part) => whole.extend(part.shape), first);
  partsOf.set(body, [first, ...rest]);
  return body;
}

/**
 * Validates with the domain's schemas and words, and hands the request on as sent; each check's output waits for
 * the domain's parse of the same value with the same schema (`checkInputAhead`), which then does not parse again.
 */
export const validatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema }) => {
  if (!(schema instanceof z.ZodType) || documentOnly.has(schema)) return (value) => ({ value });
  const parts = partsOf.get(schema) ?? [schema];
  return (value) => {
    for (const part of parts) {
      const checked = checkInputAhead(part, value);
      if (!checked.success) return { error: new ValidationError(checked.error) };
    }
    return { value };
  };
};

/** Replies are serialised as they are: reply schemas document, they never turn a reply into a 500. */
export const serializerCompiler = () => (data: unknown) => JSON.stringify(data);

export const errorReply = z.object({ error: z.string(), request_id: z.string() }).describe('Every failure: `{error, request_id}`.');

const pageMeta = z.object({ page: z.number().int(), perPage: z.number().int(), total: z.number().int() });

/** A list body: `{data, meta}`. */
export const pageOf = (item: z.ZodType) => z.object({ data: z.array(item), meta: pageMeta });

/** `{data}` without paging (small lists). */
export const listOf = (item: z.ZodType) => z.object({ data: z.array(item) });

export const idParams = z.object({ id: z.string().describe('The record id') });

interface RouteDescription {
  tag: string;
  summary: string;
  credential: Credential;
  params?: z.ZodType;
  query?: z.ZodType;
  body?: z.ZodType;
  /** Replies by status; the error reply is added for the statuses in `errors`. */
  replies: Record<number, z.ZodType>;
  errors?: number[];
}

/** The `schema` of a route: what it takes and answers, its noun and its credential. */
export function describeRoute(route: RouteDescription): FastifySchema {
  const response: Record<number, z.ZodType> = { ...route.replies };
  for (const status of route.errors ?? []) response[status] = errorReply;
  return {
    tags: [route.tag],
    summary: route.summary,
    security: SECURITY[route.credential],
    ...(route.params ? { params: route.params } : {}),
    ...(route.query ? { querystring: route.query } : {}),
    ...(route.body ? { body: route.body } : {}),
    response,
  } as FastifySchema;
}
