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

/** The one rule for the dedupe key: contacts are one per email, case-insensitively. */
export function emailKey(email: string): string {
  return email.trim().toLowerCase();
}
