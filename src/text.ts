/**
 * Text rules shared by every area's input gate (payment-services-interface.md "Resources and their fields": String,
 * Text and Alpha fields are printable text).
 */

/**
 * True when `text` holds NUL, another C0 control character (U+0000–U+001F) or DEL (U+007F): never part of a text
 * the interface gives, and NUL is refused by PostgreSQL itself.
 */
export function hasControlCharacters(text: string): boolean {
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code <= 0x1f || code === 0x7f) return true;
  }
  return false;
}

/** Deepest JSON nesting any request body of the interface needs (its deepest documented shape is 3 levels). */
export const MAX_JSON_DEPTH = 32;

/**
 * True when `value` (a parsed JSON body) nests arrays and objects deeper than `max` levels. Iterative, so a hostile
 * body cannot exhaust the stack here (signing and canonical forms recurse and would).
 */
export function exceedsJsonDepth(value: unknown, max = MAX_JSON_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth >= max) return true;
    for (const child of Object.values(current as Record<string, unknown>)) stack.push([child, depth + 1]);
  }
  return false;
}
