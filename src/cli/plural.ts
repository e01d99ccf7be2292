/** The noun for a count: singular for 1 only (`noun(2, 'entry', 'entries')` → `entries`). */
export function noun(count: number, singular: string, plural = `${singular}s`): string {
  return count === 1 ? singular : plural;
}

/** A count and its noun: `1 product`, `0 products`, `2 products`. */
export function plural(count: number, singular: string, pluralForm?: string): string {
  return `${count} ${noun(count, singular, pluralForm)}`;
}
