import {
  Context,
  Drop,
  LiquidError,
  Liquid,
  Tag,
  TypeGuards,
  toValueSync,
  type Emitter,
  type Parser,
  type Scope,
  type TagToken,
  type Template,
  type TopLevelToken,
  type ValueToken,
} from 'liquidjs';
import { BLOCK_FALLBACKS, type BlockFallback } from './product-block-source.js';
import {
  blockKey,
  PROGRESS,
  TEMPLATE_MEMORY_LIMIT,
  type BlockArguments,
  type BlockItem,
  type FailureKind,
  type PartKind,
  type PartSource,
  type RenderReply,
  type RenderTask,
  type TemplateLimits,
} from './render-protocol.js';

/**
 * The Liquid of message templates, as a render thread runs it (render-worker.ts): parse, find the product
 * blocks, render with the products the main thread fetched. Nothing here waits: a render is one synchronous run,
 * bounded by the limits, and a thread stuck anyway is ended by the pool.
 */

const MAX_BLOCK_LIMIT = 50;
const DEFAULT_BLOCK_LIMIT = 4;

/** Parsed templates kept per thread: a send renders one template for all its recipients. */
const PARSED_CACHE_SIZE = 100;

/** Where a render keeps the products of its blocks (a register: templates cannot read or change it). */
const BLOCKS_REGISTER = 'emk:blocks';
const SAMPLE_REGISTER = 'emk:sample';

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

/** What a check at save shows in a block: `limit` made-up products, so the block's body runs too. */
const sampleItems = (limit: number): BlockItem[] =>
  Array.from({ length: limit }, (_, i) => ({
    title: `Sample product ${i + 1}`,
    url: `https://example.com/products/${i + 1}`,
    image_url: `https://example.com/products/${i + 1}.jpg`,
    price: 10,
    compare_at_price: 12,
    currency: 'EUR',
    description: 'A sample product',
    categories: ['Sample'],
    external_id: `sample-${i + 1}`,
  }));

/** Writes a part's output, failing as soon as it passes the cap (a character is at least one UTF-8 byte). */
class CappedEmitter implements Emitter {
  buffer = '';
  exceeded = false;
  constructor(private readonly maxBytes: number) {}
  write(html: unknown): void {
    this.buffer += html === null || html === undefined ? '' : String(html);
    if (this.buffer.length > this.maxBytes) {
      this.exceeded = true;
      throw new Error('output limit exceeded');
    }
  }
}

/** A parsed template and the product blocks it holds. */
interface Parsed {
  templates: Template[];
  blocks: BlockArguments[];
}

class PartFailure extends Error {
  constructor(
    readonly kind: FailureKind,
    message: string,
  ) {
    super(message);
  }
}

/** Which limit an error of liquidjs (or of the emitter) is, if any. */
function failureOf(error: unknown, emitter: CappedEmitter | null): PartFailure {
  if (error instanceof PartFailure) return error;
  if (emitter?.exceeded) return new PartFailure('output', '');
  const message = error instanceof Error ? error.message : String(error);
  if (message.startsWith('template render limit exceeded')) return new PartFailure('timeout', '');
  if (message.startsWith('memory alloc limit exceeded')) return new PartFailure('memory', '');
  if (error instanceof RangeError) return new PartFailure('memory', '');
  return new PartFailure('template', message);
}

/**
 * One thread's Liquid: an HTML instance where every `{{ }}` output is escaped (`| raw` opts out) and a plain
 * one for the subject and the text part; unknown filters are refused when parsed; nothing reads files.
 */
export function createLiquidRenderer(limits: TemplateLimits, progress: Float64Array) {
  /** The blocks of the template being parsed now (parsing is synchronous: one at a time). */
  let parsingBlocks: BlockArguments[] = [];

  class ProductsTag extends Tag {
    private readonly args: BlockArguments;
    private readonly key: string;
    private readonly templates: Template[] = [];

    constructor(token: TagToken, remainTokens: TopLevelToken[], liquid: Liquid, parser: Parser) {
      super(token, remainTokens, liquid);
      const hashes = this.tokenizer.readHashes().map((hash) => ({ name: hash.name.content, value: hash.value }));
      this.tokenizer.skipBlank();
      if (!this.tokenizer.end()) throw new Error(`products tag: cannot read "${this.tokenizer.remaining()}"`);
      this.args = blockArguments(hashes);
      this.key = blockKey(this.args);
      parsingBlocks.push(this.args);
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
      const items = ctx.getRegister(SAMPLE_REGISTER) === true ? sampleItems(this.args.limit) : ((ctx.getRegister(BLOCKS_REGISTER) as Record<string, BlockItem[]>)[this.key] ?? []);
      const scope: Scope = {};
      ctx.push(scope);
      for (const [i, item] of items.entries()) {
        scope['item'] = item;
        scope['forloop'] = new BlockLoop(i, items.length);
        ctx.continueCalled = ctx.breakCalled = false;
        yield this.liquid.renderer.renderTemplates(this.templates, ctx, emitter);
        if (ctx.breakCalled) break;
      }
      ctx.continueCalled = ctx.breakCalled = false;
      ctx.pop();
    }
  }

  const instance = (outputEscape: 'escape' | undefined) => {
    const liquid = new Liquid({
      ...(outputEscape ? { outputEscape } : {}),
      strictFilters: true,
      // A missing variable (no order in a campaign) renders as nothing.
      strictVariables: false,
      ownPropertyOnly: true,
      memoryLimit: TEMPLATE_MEMORY_LIMIT,
      renderLimit: limits.timeoutMs,
    });
    // Templates come from the database, not from files: no partials or layouts.
    for (const name of ['include', 'render', 'layout']) delete liquid.tags[name];
    liquid.registerTag('products', ProductsTag);
    return liquid;
  };
  const liquids: Record<PartKind, Liquid> = { html: instance('escape'), plain: instance(undefined) };

  const parsed = new Map<string, Parsed>();

  /** The parsed template, from a least-recently-used cache keyed by kind and text: a send parses once per thread. */
  function parse(part: PartSource): Parsed {
    const key = `${part.kind}:${part.key}`;
    const cached = parsed.get(key);
    if (cached) {
      parsed.delete(key);
      parsed.set(key, cached);
      return cached;
    }
    parsingBlocks = [];
    let templates: Template[];
    try {
      templates = liquids[part.kind].parse(part.source);
    } catch (error) {
      if (LiquidError.is(error)) throw new PartFailure('template', (error as Error).message);
      throw failureOf(error, null);
    }
    const entry: Parsed = { templates, blocks: parsingBlocks };
    if (parsed.size >= PARSED_CACHE_SIZE) parsed.delete(parsed.keys().next().value!);
    parsed.set(key, entry);
    return entry;
  }

  function renderPart(part: PartSource, task: Extract<RenderTask, { op: 'render' }>): string {
    const { templates } = parse(part);
    progress[PROGRESS.phase] = 2;
    const liquid = liquids[part.kind];
    const ctx = new Context(task.variables, liquid.options, { renderLimit: limits.timeoutMs }, { liquid });
    ctx.setRegister(BLOCKS_REGISTER, task.blocks);
    ctx.setRegister(SAMPLE_REGISTER, task.sample);
    const emitter = new CappedEmitter(limits.maxBytes);
    let output: string;
    try {
      output = String(toValueSync(liquid.renderer.renderTemplates(templates, ctx, emitter)) ?? '');
    } catch (error) {
      throw failureOf(error, emitter);
    }
    if (Buffer.byteLength(output) > limits.maxBytes) throw new PartFailure('output', '');
    return output;
  }

  /** Runs one task; each part's start is written to `progress` for the pool's deadline. */
  function run(task: Exclude<RenderTask, { op: 'prepare' }>): RenderReply {
    const parts = task.op === 'blocks' ? [task.part] : task.parts;
    const outputs: string[] = [];
    for (const [i, part] of parts.entries()) {
      progress[PROGRESS.part] = i;
      progress[PROGRESS.phase] = 1;
      progress[PROGRESS.startedAt] = performance.timeOrigin + performance.now();
      try {
        if (task.op === 'blocks') return { ok: true, blocks: parse(part).blocks };
        outputs.push(renderPart(part, task));
      } catch (error) {
        const failure = failureOf(error, null);
        return { ok: false, part: i, kind: failure.kind, message: failure.message };
      } finally {
        progress[PROGRESS.startedAt] = 0;
      }
    }
    return { ok: true, outputs };
  }

  return { run };
}
