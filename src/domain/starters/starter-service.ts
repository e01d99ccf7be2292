import { z } from 'zod';
import type { CampaignService } from '../campaigns/campaign-service.js';
import type { Campaign } from '../campaigns/campaign.schema.js';
import { ValidationError } from '../errors.js';
import type { FeedService } from '../feeds/feed-service.js';
import type { FlowService } from '../flows/flow-service.js';
import type { Flow } from '../flows/flow.schema.js';
import type { SegmentService } from '../segments/segment-service.js';
import { parseInput, text } from '../shared/validate.js';
import { STARTERS, starterList, type Starter, type StarterKind } from './starter-catalog.js';

/** POST /flows or /campaigns with `{"starter": ID, "name"?}`: a draft made from a starter. */
export const starterRequestSchema = z.strictObject({ starter: text(64), name: text(255).optional() });

export const starterRecordSchema = z.object({
  id: z.string(),
  kind: z.enum(['flow', 'campaign']),
  name: z.string(),
  description: z.string(),
});
export type StarterRecord = z.output<typeof starterRecordSchema>;

/** Whether a create request asks for a starter (it names one) rather than giving the record. */
export const isStarterRequest = (body: unknown): boolean => typeof body === 'object' && body !== null && 'starter' in body;

/**
 * Starters (docs/flows.md, Starters): the list, and drafts made from them through the flows' and campaigns' own
 * create (so a starter's templates pass the same checks as any). What a starter needs besides itself, a product
 * feed for its blocks or a segment for its trigger, is created first, named after the starter.
 */
export function createStarterService(deps: {
  flows: Pick<FlowService, 'create'>;
  campaigns: Pick<CampaignService, 'create'>;
  feeds: Pick<FeedService, 'create'>;
  segments: Pick<SegmentService, 'create'>;
}) {
  function find<K extends StarterKind>(kind: K, body: unknown): { starter: Extract<Starter, { kind: K }>; name: string | undefined } {
    const input = parseInput(starterRequestSchema, body);
    const starter = STARTERS.find((s) => s.id === input.starter);
    if (!starter) throw new ValidationError(`invalid request: starter must be one of ${STARTERS.filter((s) => s.kind === kind).map((s) => s.id).join(', ')}`);
    if (starter.kind !== kind) throw new ValidationError(`invalid request: starter ${starter.id} is a ${starter.kind} starter, not a ${kind} starter`);
    return { starter: starter as Extract<Starter, { kind: K }>, name: input.name };
  }

  /** The starter's JSON with the ids of what was made for it in place. */
  async function fill<T>(workspaceId: string, starter: Starter, value: T): Promise<T> {
    let json = JSON.stringify(value);
    if (starter.feed) json = json.replaceAll('__FEED__', (await deps.feeds.create(workspaceId, starter.feed)).feed.id);
    if (starter.segment) json = json.replaceAll('__SEGMENT__', (await deps.segments.create(workspaceId, starter.segment)).id);
    return JSON.parse(json) as T;
  }

  return {
    list: (): StarterRecord[] => starterList(),

    async createFlow(workspaceId: string, body: unknown): Promise<Flow> {
      const { starter, name } = find('flow', body);
      const { trigger, message_type, reentry, steps } = starter;
      return deps.flows.create(workspaceId, await fill(workspaceId, starter, { name: name ?? starter.name, status: 'draft', trigger, message_type, reentry, steps }));
    },

    async createCampaign(workspaceId: string, body: unknown): Promise<Campaign> {
      const { starter, name } = find('campaign', body);
      return deps.campaigns.create(workspaceId, await fill(workspaceId, starter, { name: name ?? starter.name, subject: starter.subject, format: 'mjml', html: starter.html }));
    },
  };
}

export type StarterService = ReturnType<typeof createStarterService>;
