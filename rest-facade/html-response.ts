/**
 * How the façade answers an HTML page (hosted preorder page, Visa/Master confirmation, bank-account activation):
 * never cached, no scripts and nothing loaded from elsewhere (forms may post and be redirected anywhere), no MIME
 * sniffing, and no Referer leaving the page (its URL carries a token or an activation code).
 */
import type { FacadeContext } from './context';

const CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'";

export function sendHtml(ctx: FacadeContext, status: number, html: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.body = html;
}
