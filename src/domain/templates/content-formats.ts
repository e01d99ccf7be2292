/**
 * MJML takes about a CPU-second to load (its CSS and HTML minifiers come with it): loaded by a thread at its first
 * MJML template, so a process that sends only HTML never pays for it. juice is small but loaded the same way.
 */
let mjml: Promise<typeof import('mjml')> | null = null;
let juice: Promise<{ default: typeof import('juice') }> | null = null;

/**
 * A template's format (docs/email.md, Formats): what turns its source into the Liquid-HTML that Liquid renders
 * for each recipient. Run once per template on a render thread (render-worker.ts), never per recipient:
 * - `html`: CSS of its `<style>` elements is inlined into the elements it selects (juice); media queries and
 *   what cannot be inlined stay in a `<style>`. A template without `<style>` is left as written.
 * - `mjml`: compiled by MJML (strict validation); its output has its styles inlined already.
 * Liquid survives both: each `{{ … }}` and `{% … %}` is swapped for a placeholder first and put back after, so
 * neither the HTML parser nor MJML sees Liquid. Liquid that must sit between MJML elements (a `{% for %}`
 * around `<mj-column>`) goes in `<mj-raw>`; one MJML drops is an error naming its line.
 */
export const CONTENT_FORMATS = ['html', 'mjml'] as const;
export type ContentFormat = (typeof CONTENT_FORMATS)[number];

/** A template's source that cannot be prepared: the message names the line (`line 12: …`). */
export class FormatError extends Error {}

const LIQUID = /\{\{[\s\S]*?\}\}|\{%[\s\S]*?%\}/g;

interface Protected {
  source: string;
  tokens: string[];
  /** The placeholder of token i is `${prefix}${i}${suffix}`. */
  prefix: string;
  /** For each line of `source` (1-based index), the line of the original it starts on. */
  lines: number[];
}

/** Swaps each Liquid tag and output for a placeholder no parser changes (letters and digits only). */
function protect(original: string): Protected {
  let prefix = 'emkliquid';
  while (original.includes(prefix)) prefix += 'x';
  const tokens: string[] = [];
  const source = original.replace(LIQUID, (token) => {
    tokens.push(token);
    return `${prefix}${tokens.length - 1}z`;
  });
  return { source, tokens, prefix, lines: lineMap(original) };
}

/** The original line of each line of the protected source: Liquid spanning lines is one placeholder. */
function lineMap(original: string): number[] {
  const map = [0, 1];
  let originalLine = 1;
  let last = 0;
  for (const match of original.matchAll(LIQUID)) {
    const between = original.slice(last, match.index);
    for (let i = 0; i < between.split('\n').length - 1; i++) map.push(++originalLine);
    originalLine += match[0].split('\n').length - 1;
    last = match.index + match[0].length;
  }
  const rest = original.slice(last);
  for (let i = 0; i < rest.split('\n').length - 1; i++) map.push(++originalLine);
  return map;
}

/** Puts the Liquid back; a placeholder that did not survive is an error naming the line of its Liquid. */
function restore(output: string, p: Protected, original: string): string {
  const pattern = new RegExp(`${p.prefix}(\\d+)z`, 'g');
  const seen = new Set<number>();
  const restored = output.replace(pattern, (_, index: string) => {
    seen.add(Number(index));
    return p.tokens[Number(index)] ?? '';
  });
  if (seen.size < p.tokens.length) {
    const lost = p.tokens.findIndex((_, i) => !seen.has(i));
    const token = p.tokens[lost]!;
    let at = -1;
    for (let i = 0; i <= lost; i++) at = original.indexOf(p.tokens[i]!, at + 1);
    const line = original.slice(0, at).split('\n').length;
    throw new FormatError(`line ${line}: Liquid ${clip(token)} is not inside an MJML element's content: put it in <mj-raw>`);
  }
  return restored;
}

const clip = (token: string) => (token.length > 60 ? `${token.slice(0, 57)}…` : token);

interface MjmlProblem {
  line?: number;
  message?: string;
}

/** MJML's HTML for `source`, or a FormatError with the first problem its strict validation found. */
async function compileMjml(original: string): Promise<string> {
  if (!/^\s*(<!--[\s\S]*?-->\s*)*<mjml[\s>]/i.test(original)) throw new FormatError('line 1: an MJML template starts with <mjml>');
  const p = protect(original);
  let html: string;
  try {
    const { default: mjml2html } = await (mjml ??= import('mjml'));
    const result = await mjml2html(p.source, { validationLevel: 'strict', ignoreIncludes: true, keepComments: false, minify: false });
    html = result.html;
  } catch (error) {
    const first = (error as { errors?: MjmlProblem[] }).errors?.[0];
    if (first?.message) throw new FormatError(`${first.line ? `line ${p.lines[first.line] ?? first.line}: ` : ''}${unprotect(first.message, p)}`);
    throw new FormatError(unprotect(error instanceof Error ? error.message.trim() : String(error), p));
  }
  return restore(withoutIndentation(html), p, original);
}

/**
 * MJML's output without the indentation of its lines: a quarter of its bytes, which every recipient's message
 * would carry (rendered, link-signed, stored). A run of white space holding a line break stays a line break, the
 * same white space to a browser, except inside `<pre>` or `<textarea>`: output holding one is left as it is.
 */
const withoutIndentation = (html: string) => (/<(pre|textarea)[\s>]/i.test(html) ? html : html.replace(/[ \t]*\n\s*/g, '\n'));

/** A message about the protected source, with the Liquid put back for the reader. */
const unprotect = (message: string, p: Protected) => message.replace(new RegExp(`${p.prefix}(\\d+)z`, 'g'), (_, i: string) => p.tokens[Number(i)] ?? '');

/** Inlines the CSS of `<style>` elements into the elements (juice); media queries stay in a `<style>`. */
async function inlineCss(original: string): Promise<string> {
  if (!/<style[\s>]/i.test(original)) return original;
  const p = protect(original);
  const { default: inline } = await (juice ??= import('juice'));
  let html: string;
  try {
    html = inline(p.source, { preserveMediaQueries: true, preserveFontFaces: true, preserveImportant: true, applyWidthAttributes: false, applyHeightAttributes: false });
  } catch (error) {
    throw new FormatError(unprotect(error instanceof Error ? error.message : String(error), p));
  }
  return restore(html, p, original);
}

/** The Liquid-HTML of a template in `format`: what Liquid renders per recipient. */
export async function prepareContent(source: string, format: ContentFormat): Promise<string> {
  return format === 'mjml' ? compileMjml(source) : inlineCss(source);
}
