import { z } from 'zod';

/** Ids travel inside the token as a UUID's 16 bytes, or as up to 255 bytes of text. */
const tokenId = z.string().min(1, 'must not be empty').refine((id) => Buffer.byteLength(id) <= 255, 'must be at most 255 bytes');

/** What a sent message's `_ir_id` ties a visit (and then an order) to. */
export const identityClaimsSchema = z
  .object({
    contactId: tokenId,
    messageId: tokenId.optional(),
    campaignId: tokenId.optional(),
    flowId: tokenId.optional(),
  })
  .refine((c) => !(c.campaignId && c.flowId), { message: 'must not name both a campaign and a flow', path: ['flowId'] });
export type IdentityClaimsInput = z.infer<typeof identityClaimsSchema>;

export interface IdentityClaims {
  contactId: string;
  messageId: string | null;
  campaignId: string | null;
  flowId: string | null;
}

/** The identity token a payload carries: `identity_token`, or its synonyms `_ir_id` and `_emk` (the spec). */
export function identityTokenOf(body: Record<string, unknown>): string | null {
  const token = [body.identity_token, body._ir_id, body._emk].find((v) => typeof v === 'string' && v.length > 0 && v.length <= 1000);
  return (token as string | undefined) ?? null;
}
