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
