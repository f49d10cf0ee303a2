/**
 * HTML for the platform's browser pages (hosted preorder page, Visa/Master confirmation, bank-account activation,
 * the areas' page errors): the layout, the escaping, and how a page is answered (`sendHtml`). Every interpolated
 * value goes through the `html` tagged template, which escapes it with `escape-html` (& < > " ' → entities) unless
 * it is itself the output of `html`; attributes are always double-quoted. Pages carry no script and load nothing
 * from elsewhere.
 */
import escapeHtml from 'escape-html';
import type { FacadeContext } from '../context';

/** Markup produced by `html` (already escaped). */
export class SafeHtml {
  constructor(readonly value: string) {}

  toString(): string {
    return this.value;
  }
}

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === undefined || value === null || value === false) return '';
  return escapeHtml(String(value));
}

/** Tagged template: literal parts are kept, every `${value}` is HTML-escaped (arrays are joined, SafeHtml kept). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0]!;
  values.forEach((value, index) => {
    out += render(value) + strings[index + 1]!;
  });
  return new SafeHtml(out);
}

const STYLE = `body{font-family:system-ui,sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem;color:#222}
h1{font-size:1.4rem}dl{display:grid;grid-template-columns:auto 1fr;gap:.3rem 1rem}dt{color:#666}dd{margin:0}
label{display:block;margin:.6rem 0 .2rem}input{padding:.4rem;font-size:1rem;width:100%;box-sizing:border-box}
.row{display:flex;gap:.6rem}.row>div{flex:1}button{margin-top:1rem;padding:.6rem 1.2rem;font-size:1rem}
.error{color:#b00020}.muted{color:#666}`;

/** A complete document. */
export function page(title: string, body: SafeHtml): string {
  return html`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<style>${new SafeHtml(STYLE)}</style>
</head>
<body>
${body}
</body>
</html>
`.value;
}

/** A page with a heading and one message (not found, expired, refused…). */
export function messagePage(title: string, message: string): string {
  return page(title, html`<h1>${title}</h1>
<p id="message">${message}</p>`);
}

/** Of every HTML answer: no scripts and nothing loaded from elsewhere; forms may post and be redirected anywhere. */
const CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'";

/**
 * Answers an HTML page (hosted preorder page, Visa/Master confirmation, bank-account activation): never cached, the
 * policy above, no MIME sniffing, and no Referer leaving the page (its URL carries a token or an activation code).
 */
export function sendHtml(ctx: FacadeContext, status: number, html: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.body = html;
}
