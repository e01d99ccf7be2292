import {
  Context,
  Drop,
  LiquidError,
  Liquid,
  Tag,
  TypeGuards,
  type Emitter,
  type Parser,
  type Scope,
  type TagToken,
  type Template,
  type TopLevelToken,
  type ValueToken,
} from 'liquidjs';
import { ValidationError } from '../errors.js';
import type { OrderItem } from '../orders/order.schema.js';
import type { Product } from '../products/product.schema.js';
import { BLOCK_FALLBACKS, type BlockFallback, type BlockProductSource } from './product-block-source.js';

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
  workspace?: { name: string };
  unsubscribe_url?: string;
  preferences_url?: string;
}

/** Who a render is for: what a product block ranks its feed for. */
export interface RenderRecipient {
  workspaceId: string;
  contactId: string | null;
}

/** A parsed template, reusable for every recipient. */
export type CompiledTemplate = Template[];

const MAX_BLOCK_LIMIT = 50;
const DEFAULT_BLOCK_LIMIT = 4;

/** Parsed templates kept: a send renders one template for all its recipients, so a few hundred is plenty. */
const COMPILED_CACHE_SIZE = 300;

/** Where a render keeps its recipient for the product blocks (a register: templates cannot read or change it). */
const RECIPIENT_REGISTER = 'emk:recipient';

/** The product fields a block's `item` exposes. */
const blockItem = (product: Product) => ({
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

/** `forloop` inside a product block, as liquidjs's `for` tag exposes it; one per item, so a template cannot move it. */
class BlockLoop extends Drop {
  constructor(
    private readonly index0Value: number,
    readonly length: number,
  ) {
    super();
  }
  index0() {
    return this.index0Value;
  }
  index() {
    return this.index0Value + 1;
  }
  first() {
    return this.index0Value === 0;
  }
  last() {
    return this.index0Value === this.length - 1;
  }
  rindex() {
    return this.length - this.index0Value;
  }
  rindex0() {
    return this.length - this.index0Value - 1;
  }
}

interface BlockArguments {
  feedId: string;
  limit: number;
  fallback: BlockFallback | null;
}

/**
 * The arguments of `{% products feed: "ID", limit: 4, fallback: "best_selling" %}`: literals only, so a
 * template is checked whole when saved, not found wrong at its 10,000th recipient.
 */
function blockArguments(hashes: Array<{ name: string; value: ValueToken | undefined }>): BlockArguments {
  const problem = (text: string) => new Error(`products tag: ${text}`);
  const args: Partial<Record<'feed' | 'limit' | 'fallback', ValueToken | undefined>> = {};
  for (const { name, value } of hashes) {
    if (name !== 'feed' && name !== 'limit' && name !== 'fallback') throw problem(`unknown argument ${name} (expected feed, limit, fallback)`);
    if (name in args) throw problem(`${name} given twice`);
    args[name] = value;
  }
  const { feed, limit, fallback } = args;
  if (!TypeGuards.isQuotedToken(feed) || feed.content.trim() === '') throw problem('feed is required, a quoted feed id');
  if (limit !== undefined && !(TypeGuards.isNumberToken(limit) && Number.isInteger(limit.content) && limit.content >= 1 && limit.content <= MAX_BLOCK_LIMIT)) {
    throw problem(`limit must be an integer from 1 to ${MAX_BLOCK_LIMIT}`);
  }
  const fallbackName = TypeGuards.isQuotedToken(fallback) ? fallback.content : null;
  if (fallback !== undefined && !BLOCK_FALLBACKS.includes(fallbackName as BlockFallback)) {
    throw problem(`fallback must be one of ${BLOCK_FALLBACKS.join(', ')}`);
  }
  return {
    feedId: feed.content.trim(),
    limit: limit === undefined ? DEFAULT_BLOCK_LIMIT : (limit.content as number),
    fallback: fallbackName as BlockFallback | null,
  };
}

/**
 * Message templates: Liquid where every `{{ }}` output is HTML-escaped (`| raw` opts out), unknown filters are
 * refused when parsed, nothing reads files, and a product block ranks a feed for each recipient.
 */
export function createTemplates(deps: { blockProducts: BlockProductSource }) {
  const { blockProducts } = deps;
  const liquid = new Liquid({
    outputEscape: 'escape',
    strictFilters: true,
    // A missing variable (no order in a campaign) renders as nothing.
    strictVariables: false,
    ownPropertyOnly: true,
    // A template is tenant input: a runaway loop fails its message instead of stalling the send.
    memoryLimit: 10_000_000,
    renderLimit: 10_000,
  });
  // Templates come from the database, not from files: no partials or layouts.
  for (const name of ['include', 'render', 'layout']) delete liquid.tags[name];

  class ProductsTag extends Tag {
    private readonly args: BlockArguments;
    private readonly templates: Template[] = [];

    constructor(token: TagToken, remainTokens: TopLevelToken[], liquid: Liquid, parser: Parser) {
      super(token, remainTokens, liquid);
      const hashes = this.tokenizer.readHashes().map((hash) => ({ name: hash.name.content, value: hash.value }));
      this.tokenizer.skipBlank();
      if (!this.tokenizer.end()) throw new Error(`products tag: cannot read "${this.tokenizer.remaining()}"`);
      this.args = blockArguments(hashes);
      const stream = parser
        .parseStream(remainTokens)
        .on('tag:endproducts', () => void stream.stop())
        .on('template', (template: Template) => void this.templates.push(template))
        .on('end', () => {
          throw new Error('unexpected end of template, missing {% endproducts %}');
        });
      stream.start();
    }

    /** Like liquidjs's `for`: `item` and `forloop` in a scope of their own, `break` and `continue` honoured. */
    *render(ctx: Context, emitter: Emitter): Generator<unknown, void, unknown> {
      const recipient = ctx.getRegister(RECIPIENT_REGISTER) as RenderRecipient;
      const products = (yield blockProducts({ ...recipient, ...this.args })) as Product[];
      const scope: Scope = {};
      ctx.push(scope);
      for (const [i, product] of products.entries()) {
        scope['item'] = blockItem(product);
        scope['forloop'] = new BlockLoop(i, products.length);
        ctx.continueCalled = ctx.breakCalled = false;
        yield this.liquid.renderer.renderTemplates(this.templates, ctx, emitter);
        if (ctx.breakCalled) break;
      }
      ctx.continueCalled = ctx.breakCalled = false;
      ctx.pop();
    }
  }
  liquid.registerTag('products', ProductsTag);

  const compiled = new Map<string, CompiledTemplate>();

  /** The parsed template, from a least-recently-used cache keyed by its text: a send parses once. */
  function compile(html: string): CompiledTemplate {
    const cached = compiled.get(html);
    if (cached) {
      compiled.delete(html);
      compiled.set(html, cached);
      return cached;
    }
    const template = liquid.parse(html);
    if (compiled.size >= COMPILED_CACHE_SIZE) compiled.delete(compiled.keys().next().value!);
    compiled.set(html, template);
    return template;
  }

  return {
    compile,

    /** Refuses a template that does not parse (or a product block with bad arguments), naming `field`. */
    check(html: string, field: string): void {
      try {
        compile(html);
      } catch (error) {
        if (error instanceof LiquidError) throw new ValidationError(`${field}: ${error.message}`);
        throw error;
      }
    },

    /** The template for one recipient. Rejects (an Error) when a filter or a product block fails. */
    async render(template: CompiledTemplate, variables: TemplateVariables, recipient: RenderRecipient): Promise<string> {
      const ctx = new Context(variables, liquid.options, {}, { liquid });
      ctx.setRegister(RECIPIENT_REGISTER, { workspaceId: recipient.workspaceId, contactId: recipient.contactId });
      return (await liquid.render(template, ctx)) as string;
    },
  };
}

export type Templates = ReturnType<typeof createTemplates>;
