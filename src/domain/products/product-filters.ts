/**
 * What the feed filters read of a product, as rows of side tables kept in step with the catalog (written by
 * the product store, rebuilt by `reindexFilters`): one row per category, per metadata key, per variant option,
 * and the product's title sort key. Feeds then filter, count, order and page in SQL (src/domain/feeds/).
 */

export type CategoryRow = {
  workspace_id: string;
  product_id: string;
  category: string;
};

export type MetadataRow = {
  workspace_id: string;
  product_id: string;
  key: string;
  value: string;
  /** `value` lower-cased, for the case-insensitive `contains`. */
  value_folded: string;
};

export type VariantOptionRow = {
  product_id: string;
  variant_id: string;
  axis: string;
  value: string;
};

/** The categories (each once) and metadata rows of one product. */
export function productFilterRows(product: {
  id: string;
  workspace_id: string;
  categories: string[];
  metadata: Record<string, string>;
}): { categories: CategoryRow[]; metadata: MetadataRow[] } {
  const at = { workspace_id: product.workspace_id, product_id: product.id };
  return {
    categories: [...new Set(product.categories)].map((category) => ({ ...at, category })),
    metadata: Object.entries(product.metadata).map(([key, value]) => ({ ...at, key, value, value_folded: value.toLowerCase() })),
  };
}

/** One row per option of each variant. */
export function variantOptionRows(variants: Array<{ id: string; product_id: string; options: Record<string, string> | null }>): VariantOptionRow[] {
  return variants.flatMap((v) =>
    Object.entries(v.options ?? {}).map(([axis, value]) => ({ product_id: v.product_id, variant_id: v.id, axis, value })),
  );
}

// ---- the title sort key --------------------------------------------------------------------------------

const collator = new Intl.Collator('en', { sensitivity: 'base', numeric: true });

/**
 * Punctuation and symbols (all of ASCII's, and common others) ranked as the collator ranks them, all before
 * digits and letters: each stands in the key as one character from 0x01 up, equals sharing one.
 */
const SYMBOLS = [...' _-‐–—,;:!¡?¿.\'‘’"“”«»()[]{}§¶@*/\\&#%`^+±×÷<=>|~$€£¥©®°·•'].sort(collator.compare);
const SYMBOL_KEY = new Map<string, string>();
SYMBOLS.forEach((c, i) => {
  const rank = i > 0 && collator.compare(SYMBOLS[i - 1]!, c) === 0 ? SYMBOL_KEY.get(SYMBOLS[i - 1]!)!.charCodeAt(0) : 0x01 + i;
  SYMBOL_KEY.set(c, String.fromCharCode(rank));
});
/** Any other symbol sorts with the last of them, just before digits. */
const OTHER_SYMBOL = String.fromCharCode(0x01 + SYMBOLS.length);
// A digit run stands as its length (0x41 up; the longest are cut to 0x60) followed by its digits; letters, from
// 0x61, as themselves.
const DIGIT_RUN = 0x41;
const LONGEST_RUN = 0x60 - DIGIT_RUN;
/** Letters the collator treats as others at its base strength, beyond what NFKD takes apart. */
const LETTERS: Record<string, string> = { ß: 'ss', æ: 'ae', œ: 'oe', ø: 'o', đ: 'd', ð: 'd', ł: 'l', ı: 'i', ħ: 'h' };

/**
 * A text that compares byte by byte as `Intl.Collator('en', {sensitivity: 'base', numeric: true})` compares
 * titles: case and accents ignored, digit runs by value, punctuation and spaces before digits before letters.
 * Exact for Latin letters, digits and the listed symbols; other symbols sort together just before digits.
 */
export function titleKey(title: string): string {
  const folded = title.normalize('NFKD').toLowerCase().normalize('NFKD').replace(/[\p{M}\p{Cf}]/gu, '');
  let key = '';
  for (const [, digits, char] of folded.matchAll(/(\d+)|([\s\S])/gu)) {
    if (digits !== undefined) {
      const value = digits.replace(/^0+/, '');
      key += String.fromCharCode(DIGIT_RUN + Math.min(value.length, LONGEST_RUN)) + value;
      continue;
    }
    const c = LETTERS[char!] ?? char!;
    if (SYMBOL_KEY.has(c)) key += SYMBOL_KEY.get(c);
    else if (/\s/u.test(c)) key += SYMBOL_KEY.get(' ');
    else if (/\p{Cc}/u.test(c)) continue;
    else if (/[\p{L}\p{N}]/u.test(c)) key += c;
    else key += OTHER_SYMBOL;
  }
  return key;
}
