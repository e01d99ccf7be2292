import { domainToASCII } from 'node:url';
import { z } from 'zod';

/** A DNS name: labels of letters, digits and hyphens (not at either end), at least two of them, 253 characters at most. */
const DNS_NAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** A domain as DNS holds it: lower case, an IDN in its `xn--` form, no trailing dot; null when it is none. */
export function dnsName(value: string): string | null {
  const ascii = domainToASCII(value.trim().toLowerCase().replace(/\.$/, ''));
  return DNS_NAME.test(ascii) && ascii.includes('.') ? ascii : null;
}

/** POST /api/v1/senders: a domain the workspace sends from (`mail.example.com`, `bücher.example`). */
export const createSenderSchema = z.object({
  domain: z
    .string()
    .max(253, 'must be at most 253 characters')
    .transform((value, ctx) => {
      const name = dnsName(value);
      if (name === null) ctx.addIssue({ code: 'custom', message: 'must be a domain such as mail.example.com' });
      return name ?? value;
    }),
});

export interface DnsRecord {
  type: 'TXT';
  name: string;
  value: string;
}

/** A sender domain with its DKIM public key and the DNS records to publish (docs/api/senders.md). */
export interface Sender {
  id: string;
  domain: string;
  dkim: { selector: string; public_key: string };
  dns: DnsRecord[];
}

export const senderRecordSchema = z.object({
  id: z.string(),
  domain: z.string(),
  dkim: z.object({
    selector: z.string(),
    public_key: z.string().describe('RSA 2048, base64 SubjectPublicKeyInfo (DER): the `p=` of the DKIM record'),
  }),
  dns: z
    .array(z.object({ type: z.literal('TXT'), name: z.string(), value: z.string() }))
    .describe('DKIM (`<selector>._domainkey.<domain>`), SPF and DMARC records, as recommended values'),
}) satisfies z.ZodType<Sender>;
