import { domainToASCII } from 'node:url';

/**
 * Map keys made of several ids (workspace + email, workspace + event type + external id). NUL joins them: no
 * stored text holds one (see storable.ts), so two different tuples never make the same key.
 */
export const compositeKey = (...parts: ReadonlyArray<string | number>): string => parts.join('\u0000');

export const splitKey = (key: string): string[] => key.split('\u0000');

/** A (first, second) pair back from a two-part key. */
export const pairOf = (key: string): [string, string] => {
  const [first, second] = splitKey(key);
  return [first!, second!];
};

/**
 * The one rule for the dedupe key: contacts are one per email, case-insensitively, with a Unicode domain in its
 * ASCII form, as the address rule (validate.ts bareAddress) stores it and a relay's envelope carries it; so a
 * lookup or a suppression written with `bücher.example` meets the row of `xn--bcher-kva.example`.
 */
export function emailKey(email: string): string {
  const key = email.trim().toLowerCase();
  const at = key.lastIndexOf('@');
  if (at < 0 || !/[^\x00-\x7f]/.test(key.slice(at + 1))) return key;
  const ascii = domainToASCII(key.slice(at + 1));
  return ascii === '' ? key : `${key.slice(0, at)}@${ascii}`;
}
