import { BlockList, isIP } from 'node:net';

/**
 * The webhook step's guard against server-side request forgery (docs/security.md, Outbound webhooks): an
 * address on loopback, private, link-local, shared (CGNAT), documentation, multicast or reserved ranges is
 * refused unless its host is listed in `EMK_WEBHOOK_ALLOW_HOSTS`. IPv6 forms that carry an IPv4 address
 * (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged by it.
 */
const refused = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network", 0.0.0.0
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) refused.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) refused.addSubnet(net, prefix, 'ipv6');

/** The 8 groups of an IPv6 address (a trailing dotted IPv4 part becomes two groups). */
function groupsOf(address: string): number[] | null {
  let text = address.toLowerCase().split('%')[0]!;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const bytes = dotted[1]!.split('.').map(Number);
    text = text.slice(0, -dotted[1]!.length) + `${((bytes[0]! << 8) | bytes[1]!).toString(16)}:${((bytes[2]! << 8) | bytes[3]!).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const fill = tail === undefined ? 0 : 8 - left.length - right.length;
  const groups = [...left, ...Array<number>(fill).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

const ipv4Of = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;

/** The IPv4 address an IPv6 address carries, if it is one of the forms that do. */
function embeddedIpv4(address: string): string | null {
  const g = groupsOf(address);
  if (!g) return null;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return ipv4Of(g[6]!, g[7]!); // ::ffff:a.b.c.d
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return ipv4Of(g[6]!, g[7]!); // ::ffff:0:a.b.c.d
  if (zeros(0, 6) && (g[6] !== 0 || g[7]! > 1)) return ipv4Of(g[6]!, g[7]!); // ::a.b.c.d (not :: or ::1)
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return ipv4Of(g[6]!, g[7]!); // NAT64
  if (g[0] === 0x2002) return ipv4Of(g[1]!, g[2]!); // 6to4
  return null;
}

/** Whether an IP address (v4 or v6, any of the forms above) is one a webhook may not reach unless allowed. */
export function isRefusedAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  const family = isIP(bare);
  if (family === 4) return refused.check(bare, 'ipv4');
  if (family !== 6) return true;
  const inner = embeddedIpv4(bare);
  if (inner !== null && refused.check(inner, 'ipv4')) return true;
  return refused.check(bare.split('%')[0]!, 'ipv6');
}

/**
 * A host as a URL names it, normalised the way the URL parser does (`127.1`, `0x7f.1` and `2130706433` are
 * 127.0.0.1; `[::1]` keeps its brackets off), lower case. Null when it is no host.
 */
export function normaliseHost(host: string): string | null {
  try {
    const hostname = new URL(`http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}/`).hostname;
    // A trailing dot names the same host (`localhost.`).
    return hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
  } catch {
    return null;
  }
}

/** Hosts refused by name alone: `localhost` and its subdomains resolve to loopback on most systems. */
const isLocalName = (host: string) => host === 'localhost' || host.endsWith('.localhost') || host === 'localhost.localdomain';

/**
 * What a host needs before a webhook may be sent to it: refused outright (a loopback or private IP literal, a
 * local name), or to be checked when it resolves (a name). Listed hosts pass either way.
 */
export function classifyHost(host: string, allowHosts: ReadonlySet<string>): 'allowed' | 'refused' | 'resolve' {
  const normal = normaliseHost(host);
  if (normal === null) return 'refused';
  if (allowHosts.has(normal)) return 'allowed';
  if (isIP(normal) !== 0) return isRefusedAddress(normal) ? 'refused' : 'allowed';
  return isLocalName(normal) ? 'refused' : 'resolve';
}

/** `EMK_WEBHOOK_ALLOW_HOSTS`: comma-separated hosts (names or IP addresses), normalised like URLs' hosts. */
export function parseAllowHosts(value: string | undefined): Set<string> {
  const hosts = new Set<string>();
  for (const part of (value ?? '').split(',')) {
    const host = part.trim() === '' ? null : normaliseHost(part.trim());
    if (host) hosts.add(host);
  }
  return hosts;
}

/** Why a webhook URL may not be used (null: it may), checked at save and again before each call. */
export function webhookUrlProblem(raw: string, allowHosts: ReadonlySet<string>): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an https:// URL';
  if (url.username !== '' || url.password !== '') return 'must not hold a user name or password';
  if (url.hostname === '') return 'must name a host';
  const host = normaliseHost(url.hostname);
  if (host === null) return 'must name a host';
  const allowed = allowHosts.has(host);
  if (url.protocol === 'http:' && !allowed) return 'must be an https:// URL (http:// only to a host in EMK_WEBHOOK_ALLOW_HOSTS)';
  if (classifyHost(host, allowHosts) === 'refused') return `names a loopback, private or reserved address (${host}); list the host in EMK_WEBHOOK_ALLOW_HOSTS to allow it`;
  return null;
}
