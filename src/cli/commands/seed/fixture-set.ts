import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { EmkError, UsageError } from '../../../domain/errors.js';
import { domainSchema, NATIVE_PLATFORMS, type NativePlatform } from '../../../domain/integrations/integration.schema.js';
import { PACKAGE_ROOT } from '../../../domain/shared/package.js';
import { checkValue } from '../../../domain/shared/validate.js';
import { inputFile } from '../../options.js';

const DAY_MS = 86_400_000;

/** Something wrong inside a fixture set: a failure (exit 1) naming the file. */
export class FixtureError extends EmkError {
  constructor(message: string) {
    super(message, 'invalid_fixtures', 400);
  }
}

/** A campaign, flow or segment: the body its API takes, found again by `name`. */
export type NamedBody = { name: string } & Record<string, unknown>;

const namedBodySchema = z.looseObject({ name: z.string().trim().min(1, 'must not be empty') });
const fileName = z.string().trim().min(1, 'must not be empty');

/** The export files emk reads of each platform (the `--format` of the imports), by the manifest key naming them. */
const EXPORTS: Record<NativePlatform, ReadonlyArray<'contacts' | 'products' | 'orders'>> = {
  shopify: ['contacts', 'products', 'orders'],
  woocommerce: ['products'],
};

const count = z.number().int('must be a whole number').min(0, 'must be at least 0');

/**
 * `story` of a manifest: the set's campaign sent now, then of every `every` recipients (by address) the first
 * `opened` open it, the first `clicked` of those click, the first `ordered_after_click` clickers and the first
 * `ordered_after_open` openers who did not click buy `items[i % items.length]` (fixtures/demo/README.md).
 */
const storySchema = z
  .strictObject({
    campaign: z.string().trim().min(1, 'must not be empty'),
    every: count.min(1, 'must be at least 1'),
    opened: count,
    clicked: count,
    ordered_after_click: count,
    ordered_after_open: count,
    order_prefix: z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters'),
    currency: z.string().trim().length(3, 'must be a 3-letter currency code'),
    items: z
      .array(z.strictObject({ external_id: z.string().trim().min(1), title: z.string().trim().min(1), quantity: count.min(1), price: z.number().min(0) }))
      .min(1, 'must list at least one item'),
  })
  .superRefine((story, ctx) => {
    const rule = (ok: boolean, path: string, message: string) => ok || ctx.addIssue({ code: 'custom', path: [path], message });
    rule(story.opened <= story.every, 'opened', 'must be at most every');
    rule(story.clicked <= story.opened, 'clicked', 'must be at most opened');
    rule(story.ordered_after_click <= story.clicked, 'ordered_after_click', 'must be at most clicked');
    rule(story.clicked + story.ordered_after_open <= story.opened, 'ordered_after_open', 'must be at most opened minus clicked');
  });

export type FixtureStory = z.output<typeof storySchema>;

/**
 * `manifest.json` (fixtures/demo/README.md): the workspace's name and domain, then each file, all optional. With
 * `platform`, the row files are the platform's exports and `deliveries` its webhook bodies.
 */
const manifestSchema = z
  .strictObject({
    name: z.string().trim().min(1, 'must not be empty'),
    domain: z.string().trim().min(1, 'must not be empty'),
    platform: z.strictObject({ name: z.enum(NATIVE_PLATFORMS, { error: `must be ${NATIVE_PLATFORMS.join(' or ')}` }), shop_domain: domainSchema }).optional(),
    contacts: fileName.optional(),
    products: fileName.optional(),
    orders: fileName.optional(),
    events: fileName.optional(),
    deliveries: z.array(z.strictObject({ topic: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'), file: fileName })).default([]),
    segments: z.array(fileName).default([]),
    campaigns: z.array(fileName).default([]),
    flows: z.array(fileName).default([]),
    story: storySchema.optional(),
  })
  .superRefine((manifest, ctx) => {
    const { platform } = manifest;
    if (!platform && manifest.deliveries.length > 0) ctx.addIssue({ code: 'custom', path: ['deliveries'], message: 'is allowed only with a platform (the shop whose webhooks they are)' });
    for (const kind of ['contacts', 'orders'] as const) {
      if (platform && manifest[kind] !== undefined && !EXPORTS[platform.name].includes(kind)) {
        ctx.addIssue({ code: 'custom', path: [kind], message: `must be left out with platform ${platform.name}: emk reads only its ${EXPORTS[platform.name].join(', ')} export` });
      }
    }
  });

/** A shop platform whose exports and webhooks the set holds: the seed connects the workspace to it. */
export interface FixturePlatform {
  name: NativePlatform;
  shopDomain: string;
}

/** A webhook body of the set, replayed as a delivery of `topic`; `name` (the file as the manifest names it) is its retry key. */
export interface FixtureDelivery {
  topic: string;
  name: string;
  path: string;
}

export interface FixtureSet {
  name: string;
  domain: string;
  platform?: FixturePlatform;
  /** Paths of the row files (CSV or JSON Lines; with `platform`, its export files), in loading order. */
  contacts?: string;
  products?: string;
  orders?: string;
  events?: string;
  deliveries: FixtureDelivery[];
  segments: NamedBody[];
  campaigns: NamedBody[];
  flows: NamedBody[];
  story?: FixtureStory;
}

export const DEFAULT_FIXTURES = join(PACKAGE_ROOT, 'fixtures', 'demo');

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new FixtureError(`${path}: ${error instanceof SyntaxError ? 'not valid JSON' : 'cannot be read'}`);
  }
}

function checked<S extends z.ZodType>(schema: S, path: string): z.output<S> {
  const result = checkValue(schema, readJson(path));
  if (!result.success) throw new FixtureError(`${path}: ${result.problem.replace(/^body /, '')}`);
  return result.data;
}

/** Reads and checks a fixture set's manifest and its JSON documents; row files are streamed later. */
export function loadFixtureSet(dir: string): FixtureSet {
  const manifestPath = resolve(dir, 'manifest.json');
  if (!existsSync(manifestPath)) throw new UsageError(`no fixture set at ${dir}: it has no manifest.json`);
  const manifest = checked(manifestSchema, manifestPath);
  const documents = (names: string[]) => names.map((name) => checked(namedBodySchema, resolve(dir, name)) as NamedBody);
  const rowFiles = (['contacts', 'products', 'orders', 'events'] as const).flatMap((kind) => {
    const name = manifest[kind];
    const exported = manifest.platform && kind !== 'events' ? manifest.platform.name : null;
    return name === undefined ? [] : [[kind, inputFile(resolve(dir, name), exported)]];
  });
  const deliveries = manifest.deliveries.map(({ topic, file }) => {
    const path = resolve(dir, file);
    if (!existsSync(path)) throw new FixtureError(`${manifestPath}: deliveries names ${file}, which does not exist`);
    return { topic, name: file, path };
  });
  return {
    name: manifest.name,
    domain: manifest.domain,
    ...(manifest.platform ? { platform: { name: manifest.platform.name, shopDomain: manifest.platform.shop_domain } } : {}),
    ...Object.fromEntries(rowFiles),
    deliveries,
    segments: documents(manifest.segments),
    campaigns: documents(manifest.campaigns),
    flows: documents(manifest.flows),
    ...(manifest.story ? { story: manifest.story } : {}),
  };
}

/**
 * Rows give their time as `days_ago` (fractional allowed) before `anchor`, so a set stays recent whenever it
 * is loaded; `field` (`ordered_at`, `timestamp`) becomes that instant. A row with its own `field` keeps it.
 */
export function atOffset(record: Record<string, unknown>, field: string, anchor: number): Record<string, unknown> {
  const { days_ago: daysAgo, ...rest } = record;
  if (daysAgo === undefined || rest[field] !== undefined) return record;
  const days = typeof daysAgo === 'number' || typeof daysAgo === 'string' ? Number(daysAgo) : Number.NaN;
  // Left as it was sent, the time field's own check names the problem.
  if (daysAgo === '' || !Number.isFinite(days)) return { ...rest, [field]: `days_ago ${JSON.stringify(daysAgo)}` };
  return { ...rest, [field]: new Date(anchor - daysOffset(days)).toISOString() };
}

/** `days_ago` in milliseconds, whole: a stored time plus it gives the anchor back exactly. */
export const daysOffset = (days: number) => Math.round(days * DAY_MS);
