import { createPublicKey } from 'node:crypto';
import { z } from 'zod';
import { text } from '../shared/validate.js';

/** The relays whose bounce and complaint webhooks emk reads (docs/email.md, Deliverability). */
export const RELAY_PROVIDERS = ['ses', 'postmark', 'sendgrid', 'mailgun'] as const;
export type RelayProvider = (typeof RELAY_PROVIDERS)[number];

/** Whether a value is SendGrid's Event Webhook verification key: an EC P-256 key as base64 DER (SPKI). */
function isSendGridKey(value: string): boolean {
  try {
    const key = createPublicKey({ key: Buffer.from(value, 'base64'), format: 'der', type: 'spki' });
    return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
  } catch {
    return false;
  }
}

/**
 * POST /api/v1/relay-webhooks. Postmark needs `secret` (the Basic-auth password set in its webhook URL), Mailgun
 * `secret` (its HTTP webhook signing key), SendGrid `public_key` (its verification key); SES needs neither (SNS
 * signs its messages).
 */
export const createRelayWebhookSchema = z
  .object({
    provider: z.enum(RELAY_PROVIDERS),
    secret: text(256).optional(),
    public_key: text(512).optional(),
  })
  .superRefine((input, ctx) => {
    if ((input.provider === 'postmark' || input.provider === 'mailgun') && input.secret === undefined) {
      ctx.addIssue({ code: 'custom', path: ['secret'], message: `is required for ${input.provider}` });
    }
    if (input.provider === 'sendgrid') {
      if (input.public_key === undefined) ctx.addIssue({ code: 'custom', path: ['public_key'], message: 'is required for sendgrid' });
      else if (!isSendGridKey(input.public_key)) {
        ctx.addIssue({ code: 'custom', path: ['public_key'], message: 'must be the Event Webhook verification key (base64 DER, ECDSA P-256)' });
      }
    }
  });

/** The 201 reply: where the relay must post its events. */
export interface RelayWebhookCreated {
  id: string;
  provider: RelayProvider;
  url: string;
}

/** A listed relay webhook; SES ones also say whether their SNS subscription is confirmed. */
export interface RelayWebhook extends RelayWebhookCreated {
  created_at: string;
  /** SES: the SNS topic the endpoint takes notifications from (the first subscription confirmed). */
  topic_arn: string | null;
  /** SES: the confirmation link SNS sent, kept until emk confirmed it (visit it by hand if it is still unconfirmed). */
  subscribe_url: string | null;
  confirmed_at: string | null;
}

export const relayWebhookCreatedSchema = z.object({
  id: z.string(),
  provider: z.enum(RELAY_PROVIDERS),
  url: z.string().describe('`{EMK_BASE_URL}/esp/{provider}/{id}`: the URL to give the relay'),
}) satisfies z.ZodType<RelayWebhookCreated>;

export const relayWebhookRecordSchema = relayWebhookCreatedSchema.extend({
  created_at: z.string(),
  topic_arn: z.string().nullable(),
  subscribe_url: z.string().nullable(),
  confirmed_at: z.string().nullable(),
}) satisfies z.ZodType<RelayWebhook>;

export const relayEventReplySchema = z.object({
  processed: z.number().int().describe('Events acted on by this call (repeats and events naming nothing of ours are not counted)'),
});

export const espParams = z.object({
  provider: z.string().describe('`ses`, `postmark`, `sendgrid` or `mailgun`'),
  id: z.string().describe('The relay webhook id'),
});
