/**
 * Which links of a message get `_ir_id` when clicked (docs/email.md, Tracking): only those on the workspace's
 * own domains, so an identity token never goes to a third party. A listed domain covers its exact host and
 * every subdomain (`example.com` covers `shop.example.com`, not `badexample.com`); a leading `www.` of a listed
 * domain is ignored (`www.example.com` covers `example.com` too). Ports do not matter.
 */

/** A listed domain as the host it covers: lower case, no port, no trailing dot, no leading `www.`. */
const coveredHost = (domain: string) =>
  domain
    .trim()
    .toLowerCase()
    .replace(/:\d+$/, '')
    .replace(/\.$/, '')
    .replace(/^www\./, '');

/** Whether the URL's host is one of `domains` or a subdomain of one. */
export function isOnOwnDomain(url: string, domains: readonly string[]): boolean {
  let host: string;
  try {
    // WHATWG URL lower-cases the host, turns an IDN into punycode and drops credentials and port.
    host = new URL(url).hostname.replace(/\.$/, '');
  } catch {
    return false;
  }
  if (host === '') return false;
  return domains.some((domain) => {
    const covered = coveredHost(domain);
    return covered !== '' && (host === covered || host.endsWith(`.${covered}`));
  });
}
