/**
 * Character references in text that WordPress stores or serves HTML-encoded (WooCommerce's product, line item,
 * variation and category names): `&amp;`, `&ndash;`, `&#8211;`, `&#x2013;`, `&#039;`.
 *
 * Not the whole HTML table (2,231 names): WordPress writes the numeric form itself (wptexturize's `&#8211;`,
 * `&#8217;`, `&#215;`…; esc_html's `&#039;`), kses and esc_html use the five markup names, and what a shop types
 * or PHP's htmlentities() writes for Latin text comes from HTML 4's Latin-1 names and its punctuation, all here.
 * A name not listed (HTML 4's Greek letters and most mathematical signs, HTML5's additions), or a number that is
 * no Unicode scalar value, stays as written.
 */

/** HTML 4's Latin-1 names, U+00A0 to U+00FF in order (`&nbsp;` … `&yuml;`). */
const LATIN_1 =
  'nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 acute micro para ' +
  'middot cedil sup1 ordm raquo frac14 frac12 frac34 iquest Agrave Aacute Acirc Atilde Auml Aring AElig Ccedil Egrave ' +
  'Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute Ocirc Otilde Ouml times Oslash Ugrave Uacute Ucirc ' +
  'Uuml Yacute THORN szlig agrave aacute acirc atilde auml aring aelig ccedil egrave eacute ecirc euml igrave iacute icirc ' +
  'iuml eth ntilde ograve oacute ocirc otilde ouml divide oslash ugrave uacute ucirc uuml yacute thorn yuml';

/** The markup names, and HTML 4's punctuation and symbols that product names use (dashes, quotes, ™, €, …). */
const OTHERS: Record<string, number> = {
  quot: 0x22, amp: 0x26, apos: 0x27, lt: 0x3c, gt: 0x3e,
  OElig: 0x152, oelig: 0x153, Scaron: 0x160, scaron: 0x161, Yuml: 0x178, fnof: 0x192, circ: 0x2c6, tilde: 0x2dc,
  ensp: 0x2002, emsp: 0x2003, thinsp: 0x2009, zwnj: 0x200c, zwj: 0x200d, lrm: 0x200e, rlm: 0x200f,
  ndash: 0x2013, mdash: 0x2014, lsquo: 0x2018, rsquo: 0x2019, sbquo: 0x201a, ldquo: 0x201c, rdquo: 0x201d, bdquo: 0x201e,
  dagger: 0x2020, Dagger: 0x2021, bull: 0x2022, hellip: 0x2026, permil: 0x2030, prime: 0x2032, Prime: 0x2033,
  lsaquo: 0x2039, rsaquo: 0x203a, oline: 0x203e, frasl: 0x2044, euro: 0x20ac, trade: 0x2122,
  larr: 0x2190, rarr: 0x2192, minus: 0x2212, infin: 0x221e, asymp: 0x2248, ne: 0x2260, le: 0x2264, ge: 0x2265,
};

const NAMED = new Map<string, string>([
  ...LATIN_1.split(' ').map((name, i): [string, string] => [name, String.fromCodePoint(0xa0 + i)]),
  ...Object.entries(OTHERS).map(([name, code]): [string, string] => [name, String.fromCodePoint(code)]),
]);

/** `&name;`, `&#decimal;`, `&#xhex;` (names are case-sensitive: `&Eacute;` is not `&eacute;`). */
const REFERENCE = /&(?:#[xX]([0-9A-Fa-f]{1,6})|#(\d{1,7})|([A-Za-z][A-Za-z0-9]{1,31}));/g;

/** A code point that is a character (not a surrogate half, not NUL, not past U+10FFFF); else null. */
function scalar(code: number): string | null {
  return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : null;
}

/**
 * The text with its character references replaced, in one pass: `&amp;ndash;` becomes `&ndash;` (text that
 * was encoded twice is decoded once, as a browser shows it).
 */
export function decodeHtmlEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(REFERENCE, (whole, hex?: string, decimal?: string, name?: string) => {
    const decoded = hex !== undefined ? scalar(parseInt(hex, 16)) : decimal !== undefined ? scalar(Number(decimal)) : NAMED.get(name!);
    return decoded ?? whole;
  });
}
