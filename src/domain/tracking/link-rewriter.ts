import { decodeHtmlEntities } from '../shared/html-entities.js';

/**
 * Link rewriting for tracking (docs/email.md, Tracking). Only `href` attributes of `<a>` tags are touched;
 * `mailto:`, `tel:`, in-page anchors and anything that is not http(s) stay as written, and so do links the
 * caller declines (the message's own unsubscribe and preferences links).
 */
const ANCHOR_HREF = /(<a\b[^>]*?\bhref\s*=\s*)("([^"]*)"|'([^']*)')/gi;

const escapeAttribute = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;');

export function rewriteLinks(html: string, track: (url: string) => string | null): string {
  return html.replace(ANCHOR_HREF, (whole, prefix: string, _quoted: string, double?: string, single?: string) => {
    // The URL a browser would follow: the attribute's character references decoded.
    const url = decodeHtmlEntities((double ?? single ?? '').trim());
    if (!/^https?:\/\//i.test(url)) return whole;
    const tracked = track(url);
    return tracked === null ? whole : `${prefix}"${escapeAttribute(tracked)}"`;
  });
}

/** The open pixel, placed before `</body>` (or at the end of a fragment). */
export function withOpenPixel(html: string, pixelUrl: string): string {
  const pixel = `<img src="${escapeAttribute(pixelUrl)}" width="1" height="1" alt="" style="display:block;border:0;width:1px;height:1px">`;
  const close = html.search(/<\/body\s*>/i);
  return close === -1 ? html + pixel : html.slice(0, close) + pixel + html.slice(close);
}

/** The URL a click lands on: the original with `_ir_id` added, its query and fragment kept. */
export function withIdentityToken(url: string, token: string): string {
  const hash = url.indexOf('#');
  const base = hash === -1 ? url : url.slice(0, hash);
  const fragment = hash === -1 ? '' : url.slice(hash);
  const separator = base.includes('?') ? (base.endsWith('?') || base.endsWith('&') ? '' : '&') : '?';
  return `${base}${separator}_ir_id=${encodeURIComponent(token)}${fragment}`;
}
