import type { ConsentView } from '../../../domain/consent/consent-service.js';

/**
 * The consent pages: plain server-rendered HTML, readable on a phone, working without any script (a form
 * posts back to the same URL).
 */
const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${escape(title)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem;color:#222}
button{font:inherit;padding:.6rem 1.2rem;border:0;border-radius:.3rem;background:#222;color:#fff;cursor:pointer}
label{display:block;margin:.5rem 0}</style></head>
<body><main>${body}</main></body></html>`;
}

export function unsubscribePage(view: ConsentView): string {
  if (view.status === 'unsubscribed') return unsubscribedPage(view);
  return page(
    'Unsubscribe',
    `<h1>Unsubscribe</h1><p>Stop marketing email from ${escape(view.workspaceName)} to <strong>${escape(view.email)}</strong>?</p>
<form method="post"><button type="submit">Unsubscribe</button></form>`,
  );
}

export function unsubscribedPage(view: ConsentView): string {
  return page(
    'Unsubscribed',
    `<h1>You are unsubscribed</h1><p><strong>${escape(view.email)}</strong> will get no more marketing email from ${escape(view.workspaceName)}.</p>`,
  );
}

export function preferencesPage(view: ConsentView, saved = false): string {
  const option = (status: string, label: string) =>
    `<label><input type="radio" name="status" value="${status}"${view.status === status ? ' checked' : ''}> ${label}</label>`;
  return page(
    'Email preferences',
    `<h1>Email preferences</h1>${saved ? '<p role="status">Your preferences are saved.</p>' : ''}
<p>Marketing email from ${escape(view.workspaceName)} to <strong>${escape(view.email)}</strong>:</p>
<form method="post">${option('subscribed', 'Send me marketing email')}${option('unsubscribed', 'Do not send me marketing email')}
<button type="submit">Save</button></form>`,
  );
}

export function notFoundPage(): string {
  return page('Link not valid', '<h1>This link is not valid</h1><p>It may have been changed or the address removed.</p>');
}
