import type { OrderItem } from '../orders/order.schema.js';
import type { Product } from '../products/product.schema.js';
import type { BlockFallback } from './product-block-source.js';
import type { ContentFormat } from './content-formats.js';

/**
 * What the main thread and a render thread say to each other (render-pool.ts ↔ render-worker.ts): plain data
 * only, since a thread has no database. The main thread fetches each product block's products; the thread
 * parses and renders.
 */

/**
 * What a message template may read (CONTRACT with whoever builds the variables of a send). Groups a send has no
 * value for are left out and render as empty text.
 */
export interface TemplateVariables {
  /** The recipient: the fields below plus every one of its properties under its own name. */
  contact?: {
    email: string;
    first_name: string | null;
    last_name: string | null;
    phone: string | null;
    [property: string]: unknown;
  };
  /** The event that started the flow. `created_at` is RFC 3339. */
  event?: { name: string; properties: Record<string, unknown>; created_at: string };
  /** `id` is the shop's order number. */
  order?: {
    id: string | null;
    external_id: string | null;
    total_amount: number;
    currency: string;
    status: string;
    items: OrderItem[];
  };
  cart?: {
    external_id: string | null;
    total_amount: number | null;
    currency: string | null;
    checkout_url: string | null;
    items: unknown[];
  };
  /** `postal_address` is the settings' (null when unset): the default footer prints it. */
  /** A browse-abandonment flow's viewed products, newest first: each view event's properties. */
  viewed_products?: Array<Record<string, unknown>>;
  workspace?: { name: string; postal_address?: string | null };
  unsubscribe_url?: string;
  preferences_url?: string;
}

/** How a part's output is written: HTML escapes every `{{ }}` (`| raw` opts out); the subject and text do not. */
export type PartKind = 'html' | 'plain';

/** The limits of one render of one part (docs/email.md, Templates: limits). */
export interface TemplateLimits {
  /** A part's parse and render together: past it the render fails (and a stuck thread is replaced). */
  timeoutMs: number;
  /** A part's output, in UTF-8 bytes. */
  maxBytes: number;
}

export const DEFAULT_TEMPLATE_LIMITS: TemplateLimits = { timeoutMs: 1_000, maxBytes: 1_048_576 };

/**
 * Strings, arrays and ranges one render may build (liquidjs counts characters and items). It holds back what no
 * output cap can: a loop over `(1..100000000)` or a string doubled 25 times that is never printed.
 */
export const TEMPLATE_MEMORY_LIMIT = 10_000_000;

/** The arguments of one `{% products %}` block: literals, so known once the template is parsed. */
export interface BlockArguments {
  feedId: string;
  limit: number;
  fallback: BlockFallback | null;
}

/** One key per distinct block: two blocks with the same arguments show the same products. */
export const blockKey = (args: BlockArguments): string => JSON.stringify([args.feedId, args.limit, args.fallback]);

/** The product fields a block's `item` exposes. */
export type BlockItem = Pick<
  Product,
  'title' | 'url' | 'image_url' | 'price' | 'compare_at_price' | 'currency' | 'description' | 'categories' | 'external_id'
>;

export const blockItem = (product: Product): BlockItem => ({
  title: product.title,
  url: product.url,
  image_url: product.image_url,
  price: product.price,
  compare_at_price: product.compare_at_price,
  currency: product.currency,
  description: product.description,
  categories: product.categories,
  external_id: product.external_id,
});

/** One template of a task: `key` names its text (a hash), so a thread parses each text once. */
export interface PartSource {
  field: string;
  kind: PartKind;
  key: string;
  source: string;
}

export type RenderTask =
  /** Parses the part and answers the arguments of its product blocks. */
  | { op: 'blocks'; part: PartSource }
  /**
   * Renders each part in turn; `blocks` holds the products of every block by `blockKey`, or `sample` asks for
   * made-up products (a check at save).
   */
  | { op: 'render'; parts: PartSource[]; variables: TemplateVariables; blocks: Record<string, BlockItem[]>; sample: boolean }
  /** Turns a template's source in `format` into the Liquid-HTML rendered per recipient (content-formats.ts). */
  | { op: 'prepare'; format: ContentFormat; source: string };

/**
 * How long preparing one template may take: a thread loads MJML at its first MJML template (about a CPU-second,
 * several on a busy host), and a template is prepared once per process, not per recipient, so this deadline is
 * far longer than a render's.
 */
export const PREPARE_TIMEOUT_MS = 30_000;

/** Why a part failed: its own error, or one of the limits. */
export type FailureKind = 'template' | 'timeout' | 'output' | 'memory';

export type RenderReply =
  | { ok: true; outputs: string[] }
  | { ok: true; blocks: BlockArguments[] }
  | { ok: true; html: string }
  /** `phase`: where a part that ran out of time was (the pool tells, from the thread's progress). */
  | { ok: false; part: number; kind: FailureKind; message: string; phase?: 'parse' | 'render' };

/** A task as posted to a thread, numbered by the pool; the thread answers each with its number, in order. */
export interface RenderEnvelope {
  seq: number;
  task: RenderTask;
}

export interface RenderAnswer {
  seq: number;
  reply: RenderReply;
}

/** Where a thread is: written by the thread into shared memory, read by the pool when a deadline passes. */
export const PROGRESS = {
  /** When the current part started (ms since the epoch, with fractions). 0: between tasks. */
  startedAt: 0,
  /** Which part of the task. */
  part: 1,
  /** 1: parsing, 2: rendering. */
  phase: 2,
  /** The number of the task under way (its envelope's `seq`). */
  task: 3,
  length: 4,
} as const;

/** The words of each limit, the same at save, at preview and in a failed message; never the template itself. */
export const limitMessage = (kind: Exclude<FailureKind, 'template'>, limits: TemplateLimits, phase: 'parse' | 'render' = 'render'): string => {
  switch (kind) {
    case 'timeout':
      return `template took longer than ${limits.timeoutMs} ms to ${phase}`;
    case 'output':
      return `template output exceeds ${limits.maxBytes} bytes`;
    case 'memory':
      return `template needs more than ${TEMPLATE_MEMORY_LIMIT} characters or items of memory to render`;
  }
};
