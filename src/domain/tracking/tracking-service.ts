import type { Knex } from 'knex';
import type { AttributionService } from '../attribution/attribution-service.js';
import type { BatchHandler, WriteBatcher } from '../db/write-batcher.js';
import type { EventService } from '../events/event-service.js';
import type { IdentityTokenService } from '../identity-tokens/identity-token-service.js';
import type { IntegrationService } from '../integrations/integration-service.js';
import type { MessageLookup, TrackedMessage } from '../messages/message-lookup.js';
import type { SettingsService } from '../settings/settings-service.js';
import { systemClock, type Clock } from '../shared/time.js';
import { rewriteLinks, withIdentityToken, withOpenPixel } from './link-rewriter.js';
import { isOnOwnDomain } from './own-domains.js';
import {
  MAX_TRACKED_URL_BYTES,
  createTrackingTokenSigner,
  verifyTrackingToken,
  workspaceOfToken,
  type TrackingKind,
} from './tracking-token.js';

interface EngagementWrite {
  message: TrackedMessage;
  kind: 'open' | 'click';
  url: string | null;
  at: number;
}

/** The contact a consent link was made for. */
export interface ConsentSubject {
  workspaceId: string;
  contactId: string;
  /** The message whose link it was (null for links made before consent links named their message). */
  messageId: string | null;
}

/**
 * First-party open and click tracking (docs/email.md, Tracking): signed links and pixels in every sent
 * message; a click or open becomes an engagement (what attribution credits), the message's first
 * `opened_at` / `clicked_at`, and an `email_opened` / `email_clicked` event on the contact's timeline.
 */
export function createTrackingService(deps: {
  knex: Knex;
  writer: WriteBatcher;
  baseUrl: string;
  messages: MessageLookup;
  identityTokens: IdentityTokenService;
  attribution: AttributionService;
  events: EventService;
  /** The workspace's own domains: `settings.own_domains` and its website integrations' domains. */
  settings: Pick<SettingsService, 'cached'>;
  integrations: Pick<IntegrationService, 'websiteDomains'>;
  clock?: Clock;
}) {
  const { knex, writer, baseUrl, messages, identityTokens, attribution, events } = deps;
  const clock = deps.clock ?? systemClock;

  const recordEngagements: BatchHandler<EngagementWrite, void> = async (trx, writes) => {
    await attribution.writeEngagements(
      trx,
      writes.map((w) => ({
        workspaceId: w.message.workspace_id,
        contactId: w.message.contact_id,
        kind: w.kind,
        campaignId: w.message.campaign_id ?? undefined,
        flowId: w.message.flow_id ?? undefined,
        messageId: w.message.id,
        occurredAt: w.at,
      })),
    );
    for (const kind of ['open', 'click'] as const) {
      const firsts = new Map<string, number>();
      for (const w of writes) if (w.kind === kind) firsts.set(w.message.id, Math.min(w.at, firsts.get(w.message.id) ?? Infinity));
      if (firsts.size > 0) await messages.markEngaged(trx, kind, [...firsts].map(([id, at]) => ({ id, at })));
    }
    await events.recordEvents(
      trx,
      writes.map((w) => ({
        workspaceId: w.message.workspace_id,
        owner: { contactId: w.message.contact_id },
        eventName: w.kind === 'open' ? 'email_opened' : 'email_clicked',
        properties: {
          message_id: w.message.id,
          ...(w.message.campaign_id ? { campaign_id: w.message.campaign_id } : { flow_id: w.message.flow_id }),
          ...(w.url === null ? {} : { url: w.url }),
        },
        source: 'email',
        occurredAt: w.at,
        fireTrigger: true,
        contactSource: 'email',
      })),
    );
    return writes.map(() => undefined);
  };

  /** The claims of a token of this kind, checked against its workspace's secret; null when not ours. */
  async function verify(token: string, kind: TrackingKind) {
    const workspaceId = workspaceOfToken(token);
    const secret = workspaceId === null ? null : await identityTokens.secretOf(workspaceId);
    const claims = secret === null ? null : verifyTrackingToken(secret, token, kind);
    return claims !== null && claims.workspaceId === workspaceId ? claims : null;
  }

  /**
   * Records the engagement when its message exists in the token's workspace; null when it does not (a preview's
   * message never did; an erased contact's messages are gone).
   */
  async function engage(workspaceId: string, messageId: string, kind: 'open' | 'click', url: string | null): Promise<TrackedMessage | null> {
    const found = await messages.findForTracking(knex, messageId);
    const message = found !== null && found.workspace_id === workspaceId ? found : null;
    if (message) await writer.submit(recordEngagements, { message, kind, url, at: clock() });
    return message;
  }

  /** Whether a link goes to one of the workspace's own domains (only those get `_ir_id`). */
  async function isOwnLink(workspaceId: string, url: string): Promise<boolean> {
    const [settings, websites] = await Promise.all([deps.settings.cached(workspaceId), deps.integrations.websiteDomains(workspaceId)]);
    return isOnOwnDomain(url, [...websites, ...settings.own_domains]);
  }

  return {
    /**
     * Signs links, pixel and consent URLs for the messages of one workspace (one secret lookup). A preview's
     * signer leaves links as written and adds no pixel: its message is never stored, so no link of it may
     * become a redirect (docs/email.md, Tracking).
     */
    async signerFor(workspaceId: string, options: { preview?: boolean } = {}) {
      const secret = await identityTokens.secretOf(workspaceId);
      if (secret === null) throw new Error(`workspace ${workspaceId} has no secret`);
      // One signer for a message's links, one for its recipient's consent links: each keeps its subject's bytes.
      const signLink = createTrackingTokenSigner(secret, workspaceId);
      const signConsent = createTrackingTokenSigner(secret, workspaceId);
      const sign = (kind: TrackingKind, subjectId: string, url: string | null = null) => signLink({ kind, subjectId, url });
      return {
        consentUrls(contactId: string, messageId: string | null = null) {
          const token = signConsent({ kind: 'consent', subjectId: contactId, url: null, messageId });
          return { unsubscribe_url: `${baseUrl}/cp/unsubscribe/${token}`, preferences_url: `${baseUrl}/cp/preferences/${token}` };
        },
        /** Every http(s) link through /t/c/ except the message's own consent links; the pixel at the end. */
        decorate(messageId: string, html: string): string {
          if (options.preview) return html;
          const tracked = rewriteLinks(html, (url) =>
            url.startsWith(`${baseUrl}/cp/`) || Buffer.byteLength(url) > MAX_TRACKED_URL_BYTES
              ? null
              : `${baseUrl}/t/c/${sign('click', messageId, url)}`,
          );
          return withOpenPixel(tracked, `${baseUrl}/t/o/${sign('open', messageId)}`);
        },
      };
    },

    /**
     * GET /t/c/{token}: the URL to redirect to, or null (no redirect) for a token that is not ours or whose
     * message does not exist. `_ir_id` is added only on the workspace's own domains.
     */
    async click(token: string): Promise<string | null> {
      const claims = await verify(token, 'click');
      if (claims === null || claims.url === null) return null;
      const message = await engage(claims.workspaceId, claims.subjectId, 'click', claims.url);
      if (!message) return null;
      if (!(await isOwnLink(message.workspace_id, claims.url))) return claims.url;
      const identity = await identityTokens.mint(message.workspace_id, {
        contactId: message.contact_id,
        messageId: message.id,
        ...(message.campaign_id ? { campaignId: message.campaign_id } : {}),
        ...(message.flow_id ? { flowId: message.flow_id } : {}),
      });
      return withIdentityToken(claims.url, identity);
    },

    /** GET /t/o/{token}: whether the token was ours (the pixel answers either way it is valid). */
    async open(token: string): Promise<boolean> {
      const claims = await verify(token, 'open');
      if (claims === null) return false;
      await engage(claims.workspaceId, claims.subjectId, 'open', null);
      return true;
    },

    /** The contact a /cp/ link was made for; null for a token that is not ours. */
    async consentSubject(token: string): Promise<ConsentSubject | null> {
      const claims = await verify(token, 'consent');
      return claims === null ? null : { workspaceId: claims.workspaceId, contactId: claims.subjectId, messageId: claims.messageId ?? null };
    },
  };
}

export type TrackingService = ReturnType<typeof createTrackingService>;
