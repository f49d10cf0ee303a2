/** An absolute http: or https: URL (merchant callback_url, preorder redirect_url / call_back_url, tokenize call_back). */
export function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}
