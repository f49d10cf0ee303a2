/**
 * What every dashboard answer carries (docs/dashboard.md "Security headers"), its cookies, and the checks of a form
 * submission that need no RPC. HTTP only: the session and its CSRF token are checked by DashboardService.
 *
 *   Content-Security-Policy   default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self';
 *                             frame-ancestors 'none'; base-uri 'none'   (no script can run, nothing loads from
 *                             elsewhere, forms post only here, no page can be framed)
 *   X-Frame-Options DENY, X-Content-Type-Options nosniff, Referrer-Policy no-referrer, Cache-Control no-store
 *
 * Cookies: `dashboard_session` (the session token) and `dashboard_signin` (the sign-in form's CSRF token, a
 * double-submit value: a page of another site can neither read nor set it), both HttpOnly, SameSite=Strict,
 * Path=/dashboard, and Secure in live mode or when PUBLIC_BASE_URL is https (a test-mode stack on plain http gets
 * them without Secure, which the browser would otherwise drop).
 */
import type { Config } from '../../src/config';
import { constantTimeEqual, randomToken } from '../../src/crypto/secrets';
import type { FacadeContext } from '../context';
import { DASHBOARD_BASE } from '../views/dashboard';

export const CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export const SESSION_COOKIE = 'dashboard_session';
export const SIGN_IN_COOKIE = 'dashboard_signin';
/** How long a sign-in form stays usable, seconds. */
const SIGN_IN_COOKIE_SECONDS = 3600;
/** A cookie value as the platform issues them (base64url); anything else is no cookie. */
const COOKIE_VALUE = /^[A-Za-z0-9_-]{16,256}$/;

/** The security headers of every dashboard answer (pages, redirects, the stylesheet). */
export function setSecurityHeaders(ctx: FacadeContext): void {
  ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('Cache-Control', 'no-store');
}

/** Answers an HTML page with `status` and the security headers. */
export function sendPage(ctx: FacadeContext, status: number, document: string): void {
  setSecurityHeaders(ctx);
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = document;
}

/** 303 See Other to a dashboard path (after a form, or to the sign-in page). */
export function seeOther(ctx: FacadeContext, path: string): void {
  setSecurityHeaders(ctx);
  ctx.status = 303;
  ctx.set('Location', `${DASHBOARD_BASE}${path}`);
  ctx.body = '';
}

/** Whether cookies get `Secure`: always in live mode; in test mode when the public base URL is https. */
export function secureCookies(config: Pick<Config, 'PAYMENTS_MODE' | 'PUBLIC_BASE_URL'>): boolean {
  return config.PAYMENTS_MODE === 'live' || config.PUBLIC_BASE_URL.startsWith('https:');
}

/** Sets (maxAgeSeconds > 0) or clears (0) a dashboard cookie. */
export function setCookie(ctx: FacadeContext, name: string, value: string, maxAgeSeconds: number): void {
  const attributes = [`${name}=${value}`, `Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`, `Path=${DASHBOARD_BASE}`, 'HttpOnly', 'SameSite=Strict'];
  if (secureCookies(ctx.state.config)) attributes.push('Secure');
  ctx.append('Set-Cookie', attributes.join('; '));
}

/** A dashboard cookie's value, or '' when absent or not of the platform's form. */
export function cookieOf(ctx: FacadeContext, name: string): string {
  const value = ctx.cookies.get(name) ?? '';
  return COOKIE_VALUE.test(value) ? value : '';
}

/** The sign-in form's CSRF token: the browser's sign-in cookie, else a new one (set on this answer). */
export function signInToken(ctx: FacadeContext): string {
  const existing = cookieOf(ctx, SIGN_IN_COOKIE);
  if (existing) return existing;
  const token = randomToken(32);
  setCookie(ctx, SIGN_IN_COOKIE, token, SIGN_IN_COOKIE_SECONDS);
  return token;
}

/** True when the sign-in form's `csrf_token` is the browser's sign-in cookie (constant time). */
export function signInTokenMatches(ctx: FacadeContext, presented: string): boolean {
  const expected = cookieOf(ctx, SIGN_IN_COOKIE);
  return expected !== '' && constantTimeEqual(presented, expected);
}

/**
 * False for a form a browser says came from another site (`Sec-Fetch-Site` cross-site or same-site): refused before
 * anything else. Requests without the header (older browsers, other clients) go on to the token checks.
 */
export function fromThisOrigin(ctx: FacadeContext): boolean {
  const site = ctx.get('Sec-Fetch-Site');
  return site === '' || site === 'same-origin' || site === 'none';
}

/** The urlencoded form of a POST (the app read the raw body); empty for any other content type. */
export function formOf(ctx: FacadeContext): URLSearchParams {
  return ctx.is('application/x-www-form-urlencoded') ? new URLSearchParams(ctx.state.rawBody) : new URLSearchParams();
}
