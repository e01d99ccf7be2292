import { createHash } from 'node:crypto';
import { ValidationError } from '../errors.js';
import type { BlockProductSource } from './product-block-source.js';
import type { ContentFormat } from './content-formats.js';
import { createRenderPool, type RenderPool } from './render-pool.js';
import {
  PREPARE_TIMEOUT_MS,
  blockItem,
  blockKey,
  DEFAULT_TEMPLATE_LIMITS,
  limitMessage,
  type BlockArguments,
  type BlockItem,
  type PartKind,
  type PartSource,
  type RenderReply,
  type TemplateLimits,
  type TemplateVariables,
} from './render-protocol.js';

export { DEFAULT_TEMPLATE_LIMITS, type TemplateLimits, type TemplateVariables } from './render-protocol.js';
export { CONTENT_FORMATS, type ContentFormat } from './content-formats.js';

/** Who a render is for: what a product block ranks its feed for. */
export interface RenderRecipient {
  workspaceId: string;
  contactId: string | null;
}

/** Which part of a message a template is: the HTML part escapes its output, the subject and the text do not. */
export type MessagePart = 'subject' | 'html' | 'text';

const kindOf = (part: MessagePart): PartKind => (part === 'html' ? 'html' : 'plain');

/** A template ready to render for every recipient: its text, how its output is written, its product blocks. */
export interface CompiledTemplate {
  readonly kind: PartKind;
  readonly key: string;
  readonly source: string;
}

/** A template that cannot be used: it does not parse, fails to render or passes a limit. A 400 naming the field. */
export class TemplateError extends ValidationError {}

type Failure = Extract<RenderReply, { ok: false }>;
type Analysis = { ok: true; blocks: BlockArguments[] } | Failure;

/** Templates kept ready (and their product blocks): a send renders one template for all its recipients. */
const COMPILED_CACHE_SIZE = 300;
/** Prepared sources kept per format (MJML compiled, CSS inlined), by their text. */
const PREPARED_CACHE_SIZE = 300;

/** What a check at save renders against: every variable group of the contract, so every branch can run. */
const SAMPLE_VARIABLES: TemplateVariables = {
  contact: { email: 'sample@example.com', first_name: 'Sample', last_name: 'Recipient', phone: '+10000000000' },
  event: { name: 'sample_event', properties: {}, created_at: '2026-01-01T00:00:00.000Z' },
  order: {
    id: '1001',
    external_id: 'sample-order',
    total_amount: 10,
    currency: 'EUR',
    status: 'paid',
    items: [{ external_id: 'sample-1', title: 'Sample product 1', quantity: 1, price: 10 }],
  },
  cart: { external_id: 'sample-cart', total_amount: 10, currency: 'EUR', checkout_url: 'https://example.com/checkout', items: [{ title: 'Sample product 1' }] },
  viewed_products: [{ product_id: 'sample-1', title: 'Sample product 1', url: 'https://example.com/p/1', image_url: 'https://example.com/p/1.jpg', price: 10 }],
  workspace: { name: 'Sample shop', postal_address: '1 Sample Street\n12345 Sample City' },
  unsubscribe_url: 'https://example.com/u/sample',
  preferences_url: 'https://example.com/p/sample',
};

/**
 * Message templates (docs/email.md, Templates): Liquid where `{{ }}` output is HTML-escaped in the HTML part
 * only (`| raw` opts out), unknown filters are refused, nothing reads files, and a product block shows a feed
 * ranked for each recipient. Parsing and rendering run on a pool of threads (render-pool.ts), each part within
 * a deadline and an output cap; the product blocks' products are fetched here first, since a thread has no
 * database, and handed to the thread with the variables.
 */
export function createTemplates(deps: { blockProducts: BlockProductSource; limits?: Partial<TemplateLimits>; threads?: number }) {
  const { blockProducts } = deps;
  const limits: TemplateLimits = { ...DEFAULT_TEMPLATE_LIMITS, ...deps.limits };
  // Started at the first render: a command that renders nothing starts no thread.
  let pool: RenderPool | null = null;
  const run: RenderPool['run'] = (task) => (pool ??= createRenderPool({ limits, threads: deps.threads })).run(task);

  const compiled: Record<PartKind, Map<string, CompiledTemplate>> = { html: new Map(), plain: new Map() };
  const analyses = new Map<CompiledTemplate, Promise<Analysis>>();

  /** A least-recently-used cache keyed by the template's text: a send hashes and parses once. */
  function compile(source: string, part: MessagePart = 'html'): CompiledTemplate {
    const kind = kindOf(part);
    const cache = compiled[kind];
    const cached = cache.get(source);
    if (cached) {
      cache.delete(source);
      cache.set(source, cached);
      return cached;
    }
    const template: CompiledTemplate = { kind, source, key: createHash('sha1').update(source).digest('base64') };
    if (cache.size >= COMPILED_CACHE_SIZE) {
      const [oldest, dropped] = cache.entries().next().value!;
      cache.delete(oldest);
      analyses.delete(dropped);
    }
    cache.set(source, template);
    return template;
  }

  type Prepared = { ok: true; html: string } | { ok: false; message: string };
  /** Per format, by the template's text: its Liquid-HTML, or the TemplateError's message without its field. */
  const prepared: Record<ContentFormat, Map<string, Promise<Prepared>>> = { html: new Map(), mjml: new Map() };

  /**
   * The Liquid-HTML of an HTML part in `format` (content-formats.ts), prepared once on a thread and kept by its
   * text (a send passes the same string for every recipient, so the lookup does not read it again): every
   * recipient renders the same prepared template. A source that cannot be prepared fails every time, so that
   * answer is kept too; a timeout or a failure of the pool is not.
   */
  async function prepare(source: string, format: ContentFormat, field: string): Promise<string> {
    const cache = prepared[format];
    const key = source;
    let entry = cache.get(key);
    if (entry) {
      cache.delete(key);
      cache.set(key, entry);
    } else if (format === 'html' && !/<style[\s>]/i.test(source)) {
      // Nothing to inline: no thread needed.
      entry = Promise.resolve({ ok: true as const, html: source });
      cache.set(key, entry);
    } else {
      entry = run({ op: 'prepare', format, source }).then((reply) => {
        if (reply.ok && 'html' in reply) return { ok: true as const, html: reply.html };
        if (!reply.ok && reply.kind === 'template') return { ok: false as const, message: reply.message };
        cache.delete(key);
        if (!reply.ok && reply.kind === 'timeout') return { ok: false as const, message: `template took longer than ${PREPARE_TIMEOUT_MS} ms to compile` };
        return { ok: false as const, message: limitMessage(!reply.ok && reply.kind !== 'template' ? reply.kind : 'memory', limits) };
      }, (error: unknown) => {
        cache.delete(key);
        throw error;
      });
      if (cache.size >= PREPARED_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      cache.set(key, entry);
    }
    const result = await entry;
    if (!result.ok) throw new TemplateError(`${field}: ${result.message}`);
    return result.html;
  }

  const partOf = (template: CompiledTemplate, field: string): PartSource => ({ field, kind: template.kind, key: template.key, source: template.source });

  const problem = (field: string, failure: Failure): TemplateError =>
    new TemplateError(`${field}: ${failure.kind === 'template' ? failure.message : limitMessage(failure.kind, limits, failure.phase)}`);

  /**
   * The product blocks of a template, parsed once on a thread. A template that does not parse fails every time,
   * so that answer is kept; a parse that ran out of time may only have met a busy machine, and a failure of the
   * pool is not the template's, so neither is remembered: the next recipient tries again.
   */
  function analyse(template: CompiledTemplate): Promise<Analysis> {
    let analysis = analyses.get(template);
    if (!analysis) {
      analysis = run({ op: 'blocks', part: partOf(template, '') }).then((reply) => reply as Analysis);
      analyses.set(template, analysis);
      const forget = () => analyses.delete(template);
      analysis.then((result) => {
        if (!result.ok && result.kind !== 'template') forget();
      }, forget);
    }
    return analysis;
  }

  /** Renders parts for one recipient in one task: their blocks' products fetched first, then the thread renders. */
  async function renderParts(parts: Array<{ field: string; template: CompiledTemplate }>, variables: TemplateVariables, recipient: RenderRecipient): Promise<string[]> {
    const found = await Promise.all(parts.map(({ template }) => analyse(template)));
    const blocks: Record<string, BlockItem[]> = {};
    for (const [i, analysis] of found.entries()) {
      if (!analysis.ok) throw problem(parts[i]!.field, analysis);
      for (const args of analysis.blocks) {
        const key = blockKey(args);
        if (!(key in blocks)) blocks[key] = (await blockProducts({ ...recipient, ...args })).map(blockItem);
      }
    }
    const reply = await run({ op: 'render', parts: parts.map(({ field, template }) => partOf(template, field)), variables, blocks, sample: false });
    if (!reply.ok) throw problem(parts[reply.part]!.field, reply);
    return 'outputs' in reply ? reply.outputs : [];
  }

  return {
    limits,
    compile,

    /** One template for one recipient. Rejects with a TemplateError naming `field`, or the error of a product block. */
    async render(template: CompiledTemplate, variables: TemplateVariables, recipient: RenderRecipient, field = 'html'): Promise<string> {
      const [output] = await renderParts([{ field, template }], variables, recipient);
      return output!;
    },

    /**
     * A message's subject, HTML and text (when it has a text template) for one recipient, in one task; with
     * `footer`, its footer parts too (`footer_html`, and `footer_text` when given), rendered beside the body.
     */
    async renderMessage(
      content: { subject: string; html: string; text: string | null; format?: ContentFormat | undefined },
      variables: TemplateVariables,
      recipient: RenderRecipient,
      footer?: { html: string; text: string | null },
    ): Promise<{ subject: string; html: string; text: string | null; footer?: { html: string; text: string | null } }> {
      const optional = (field: string, source: string | null | undefined, part: MessagePart) =>
        typeof source === 'string' ? [{ field, template: compile(source, part) }] : [];
      const parts = [
        { field: 'subject', template: compile(content.subject, 'subject') },
        { field: 'html', template: compile(await prepare(content.html, content.format ?? 'html', 'html'), 'html') },
        ...optional('text', content.text, 'text'),
        ...optional('footer_html', footer?.html, 'html'),
        ...optional('footer_text', footer?.text, 'text'),
      ];
      const outputs = await renderParts(parts, variables, recipient);
      const [subject, html] = outputs;
      const text = content.text === null ? null : outputs[2]!;
      const rest = outputs.slice(content.text === null ? 2 : 3);
      return { subject: subject!, html: html!, text, ...(footer ? { footer: { html: rest[0]!, text: footer.text === null ? null : rest[1]! } } : {}) };
    },

    /**
     * Refuses (TemplateError, a 400) a template that does not parse or cannot render against sample data within
     * the limits, naming its field: `${prefix}subject`, `${prefix}html`, `${prefix}text`. The HTML part is
     * prepared in its `format` first (MJML compiled, CSS inlined), so an MJML error names `${prefix}html` and
     * the line; `format` alone (a PATCH of the format) is checked against `html` when that is given.
     */
    async check(fields: Partial<Record<MessagePart, string | null | undefined>> & { format?: ContentFormat | undefined }, prefix = ''): Promise<void> {
      const html = typeof fields.html === 'string' ? await prepare(fields.html, fields.format ?? 'html', `${prefix}html`) : undefined;
      const parts = (['subject', 'html', 'text'] as const).flatMap((part) => {
        const source = part === 'html' ? html : fields[part];
        return typeof source === 'string' ? [partOf(compile(source, part), `${prefix}${part}`)] : [];
      });
      if (parts.length === 0) return;
      const reply = await run({ op: 'render', parts, variables: SAMPLE_VARIABLES, blocks: {}, sample: true });
      if (!reply.ok) throw problem(parts[reply.part]!.field, reply);
    },

    /** Ends the render threads. */
    close: async (): Promise<void> => {
      await pool?.close();
      pool = null;
    },
  };
}

export type Templates = ReturnType<typeof createTemplates>;
