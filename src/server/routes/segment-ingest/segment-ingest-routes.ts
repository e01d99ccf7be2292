import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import {
  batchBodySchema,
  MAX_BATCH_BYTES,
  MAX_MESSAGE_BYTES,
  singleBodySchemas,
  MESSAGE_TYPES,
  successReplySchema,
} from '../../../domain/segment-ingest/segment-ingest.schema.js';
import { describedOnly, describeRoute } from '../../openapi/route-schema.js';
import { segmentWriteKey } from '../../plugins/segment-write-key.js';

const SUMMARIES = {
  identify: 'Segment identify: traits.email names the contact (created if unseen); userId kept as user_id',
  track: 'Segment track: stores an event (Segment e-commerce names become emk standard events)',
  page: 'Segment page: stores active_on_site with url, title and referrer',
  alias: 'Segment alias: links previousId to the contact of userId',
  screen: 'Segment screen: accepted, not stored',
  group: 'Segment group: accepted, not stored',
} as const;

/** Each type's paths: Segment's HTTP API names, and the one-letter ones analytics.js posts to (`/v1/t`, `/v1/b`). */
const pathsOf = (name: string) => [`/v1/${name}`, `/v1/${name.charAt(0)}`];

/**
 * Segment's HTTP Tracking API (docs/api/segment.md). Bodies are documented, not validated here: the write key
 * is checked first (401), then each message by the domain (400 naming the field, `batch[i]` in a batch).
 */
export function segmentIngestRoutes(services: Services) {
  const ingest = { tag: 'Segment-compatible ingest', credential: 'segmentWriteKey' as const, replies: { 200: successReplySchema } };

  return async (app: FastifyInstance) => {
    for (const type of MESSAGE_TYPES) {
      for (const path of pathsOf(type)) {
        app.post(
          path,
          {
            bodyLimit: MAX_MESSAGE_BYTES,
            schema: describeRoute({ ...ingest, summary: SUMMARIES[type], body: describedOnly(singleBodySchemas[type]), errors: [400, 401, 403, 413, 429] }),
          },
          async (request) => services.segmentIngest.receive(segmentWriteKey(request), type, request.body),
        );
      }
    }
    for (const path of [...pathsOf('batch'), '/v1/import']) {
      app.post(
        path,
        {
          bodyLimit: MAX_BATCH_BYTES,
          schema: describeRoute({
            ...ingest,
            summary: `Segment ${path === '/v1/import' ? 'import (same as batch)' : 'batch'}: up to 500 KB of messages, all stored or none`,
            body: describedOnly(batchBodySchema),
            errors: [400, 401, 403, 413, 429],
          }),
        },
        async (request) => services.segmentIngest.receiveBatch(segmentWriteKey(request), request.body),
      );
    }
  };
}
