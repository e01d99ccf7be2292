import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../../domain/create-services.js';
import { espParams, relayEventReplySchema } from '../../../domain/relay-webhooks/relay-webhook.schema.js';
import { describedOnly, describeRoute } from '../../openapi/route-schema.js';

/** A relay's call is at most 1 MiB (SendGrid batches events; SES, Postmark and Mailgun send one): 413 beyond. */
export const ESP_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * Where relays post bounces, complaints and deliveries (docs/email.md, Deliverability). No API key: each call is
 * authenticated by the relay's own scheme over the raw body, so this plugin alone takes every body as bytes.
 */
export function espRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: ESP_BODY_LIMIT_BYTES }, (_request, body, done) => done(null, body));

    app.post<{ Params: { provider: string; id: string } }>(
      '/esp/:provider/:id',
      {
        bodyLimit: ESP_BODY_LIMIT_BYTES,
        schema: describeRoute({
          tag: 'Relay webhooks',
          credential: 'none',
          summary: "A relay's bounce, complaint and delivery events, authenticated by the relay's signature or credential",
          params: espParams,
          body: describedOnly(z.unknown().describe("The relay's documented payload (SNS message, Postmark record, SendGrid event array, Mailgun event)")),
          replies: { 200: relayEventReplySchema },
          errors: [400, 401, 404, 413],
        }),
      },
      async (request) =>
        services.relayWebhooks.receive(request.params.provider, request.params.id, {
          body: Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0),
          headers: request.headers,
        }),
    );
  };
}
