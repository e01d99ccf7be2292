import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { EmkError, UsageError } from '../../../domain/errors.js';
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

/** `manifest.json` (fixtures/demo/README.md): the workspace's name and domain, then each file, all optional. */
const manifestSchema = z.strictObject({
  name: z.string().trim().min(1, 'must not be empty'),
  domain: z.string().trim().min(1, 'must not be empty'),
  contacts: fileName.optional(),
  products: fileName.optional(),
  orders: fileName.optional(),
  events: fileName.optional(),
  segments: z.array(fileName).default([]),
  campaigns: z.array(fileName).default([]),
  flows: z.array(fileName).default([]),
});

export interface FixtureSet {
  name: string;
  domain: string;
  /** Paths of the row files (CSV or JSON Lines), in loading order. */
  contacts?: string;
  products?: string;
  orders?: string;
  events?: string;
  segments: NamedBody[];
  campaigns: NamedBody[];
  flows: NamedBody[];
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
    return name === undefined ? [] : [[kind, inputFile(resolve(dir, name))]];
  });
  return {
    name: manifest.name,
    domain: manifest.domain,
    ...Object.fromEntries(rowFiles),
    segments: documents(manifest.segments),
    campaigns: documents(manifest.campaigns),
    flows: documents(manifest.flows),
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
