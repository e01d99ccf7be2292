import type { Settings } from '../settings/settings.schema.js';
import type { ContentFormat, RenderRecipient, Templates, TemplateVariables } from '../templates/template-engine.js';

/**
 * The footer of marketing mail (docs/email.md, Deliverability: Footer): every marketing message carries a visible
 * way out. A part whose rendered output lacks the message's own unsubscribe URL gets the workspace's footer
 * (`settings.footer_html` / `footer_text`, else the defaults below), rendered by the same engine and limits.
 */

/** A small centred paragraph: the workspace, its postal address when set, the two consent links. */
export const DEFAULT_FOOTER_HTML =
  '<p style="margin:24px 0 0;font-family:Arial,sans-serif;font-size:12px;line-height:18px;color:#6b7280;text-align:center">' +
  '{{ workspace.name }}{% if workspace.postal_address %}<br>{{ workspace.postal_address | escape | newline_to_br | raw }}{% endif %}<br>' +
  '<a href="{{ unsubscribe_url }}" style="color:#6b7280">Unsubscribe</a> · ' +
  '<a href="{{ preferences_url }}" style="color:#6b7280">Manage preferences</a></p>';

/** The text part's version of the default. */
export const DEFAULT_FOOTER_TEXT =
  '{{ workspace.name }}{% if workspace.postal_address %}\n{{ workspace.postal_address }}{% endif %}\n' +
  'Unsubscribe: {{ unsubscribe_url }}\nManage preferences: {{ preferences_url }}';

/** The footer templates of a marketing message; the text one only when the message has a text template. */
export function footerTemplates(settings: Pick<Settings, 'footer_html' | 'footer_text'>, hasText: boolean): { html: string; text: string | null } {
  return { html: settings.footer_html ?? DEFAULT_FOOTER_HTML, text: hasText ? (settings.footer_text ?? DEFAULT_FOOTER_TEXT) : null };
}

const escapeHtml = (value: string) =>
  value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

/**
 * Whether a rendered part shows the unsubscribe URL: by the output, not the template's text, so a template that
 * prints it through a variable, a filter or an `assign` counts, and one that mentions `unsubscribe_url` only in a
 * branch not taken does not. The HTML part may hold it escaped (`&amp;` in a base URL's query).
 */
const shows = (output: string, url: string) => output.includes(url) || output.includes(escapeHtml(url));

/**
 * The parts with the footer added where they lack `unsubscribeUrl`: into the HTML before its `</body>` (where the pixel goes too) (else
 * at the end); to the text part after a blank line. The text derived from the HTML (no text template) carries
 * the HTML's footer.
 */
function withFooter(
  parts: { html: string; text: string | null },
  footer: { html: string; text: string | null },
  unsubscribeUrl: string,
): { html: string; text: string | null } {
  let { html, text } = parts;
  if (!shows(html, unsubscribeUrl)) {
    const end = html.search(/<\/body\s*>/i);
    html = end < 0 ? `${html}\n${footer.html}` : `${html.slice(0, end)}${footer.html}\n${html.slice(end)}`;
  }
  if (text !== null && footer.text !== null && !shows(text, unsubscribeUrl)) text = `${text.replace(/\s+$/, '')}\n\n${footer.text}`;
  return { html, text };
}

/** Whether a template can print the URL by name (a dynamic lookup such as `{{ [key] }}` is left to the output test). */
const names = (source: string | null) => source === null || source.includes('unsubscribe_url');

/**
 * A message's parts for one recipient, with the footer where a part lacks `unsubscribeUrl` (`footer` null: none).
 * A body that never names `unsubscribe_url` (nearly always without the link) has its footer rendered in the same
 * task; one that names it renders alone, and the footer follows in a task of its own only when the link did not
 * show (a branch not taken), so a template with the link pays nothing for the footer.
 */
export async function renderWithFooter(
  templates: Pick<Templates, 'renderMessage' | 'render' | 'compile'>,
  content: { subject: string; html: string; text: string | null; format?: ContentFormat | undefined },
  variables: TemplateVariables,
  recipient: RenderRecipient,
  footer: { html: string; text: string | null } | null,
  unsubscribeUrl: string,
): Promise<{ subject: string; html: string; text: string | null }> {
  const ahead = footer !== null && !(names(content.html) && names(content.text));
  const out = await templates.renderMessage(content, variables, recipient, ahead ? footer : undefined);
  if (footer === null) return out;
  let rendered = out.footer;
  if (!rendered && (!shows(out.html, unsubscribeUrl) || (out.text !== null && !shows(out.text, unsubscribeUrl)))) {
    const part = (source: string | null, kind: 'html' | 'text') =>
      source === null ? Promise.resolve(null) : templates.render(templates.compile(source, kind), variables, recipient, `footer_${kind}`);
    const [html, text] = await Promise.all([part(footer.html, 'html'), part(footer.text, 'text')]);
    rendered = { html: html!, text };
  }
  return rendered ? { subject: out.subject, ...withFooter(out, rendered, unsubscribeUrl) } : out;
}
