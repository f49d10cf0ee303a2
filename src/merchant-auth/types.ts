/**
 * The merchant authentication's shapes (./index.ts implements them). A leaf module: the deps every service receives
 * (src/platform-deps.ts) name `MerchantAuth`, and the implementation imports modules that take those deps.
 */
import type { HandlerContext } from '@connectrpc/connect';
import type { ActionAuth, SignedEnvelope } from '../gen/payments/wallet/v1/wallet_pb';
import type { Merchant } from '../onboarding/types';

/** What the merchant sent: its headers and the raw body (payments.wallet.v1.SignedEnvelope). */
export type Envelope = Pick<SignedEnvelope, 'merchantId' | 'merchantSecretKey' | 'body'>;

/** A body whose signature verified: its parameters (parsed losslessly) and its identity. */
export interface SignedBody {
  parameters: Record<string, unknown>;
  /**
   * Hex SHA-256 of the signature's bytes. RSASSA-PKCS1-v1_5 gives one signature per canonical string and key, so
   * this names the signed body (whatever its whitespace or key order) without storing anything it says.
   */
  id: string;
}

/** The merchant a request acts for, and what it signed. */
export interface MerchantAct {
  merchantId: string;
  /**
   * The verified signed body: its identity and its `request_id` ("" when it has none, null when it is no text).
   * Undefined for a request
   * without ActionAuth from a caller bound to the merchant.
   */
  signed?: { id: string; requestId: string | null };
}

export interface MerchantAuth {
  /**
   * The whole check of one /do-action call: merchant headers, session, signed body (in that order of precedence;
   * the two lookups run in parallel). @returns the merchant id and the verified body.
   * @throws DomainError MERCHANT_UNAUTHENTICATED, SESSION_MISSING | SESSION_INVALID | SESSION_EXPIRED,
   *   INVALID_SIGNATURE, VALIDATION_FAILED (an ambiguous parameter)
   */
  authenticateAction(envelope: Envelope | undefined, sessionToken: string): Promise<{ merchantId: string; signed: SignedBody }>;
  /**
   * The merchant an Area C service request acts for. With ActionAuth: the merchant it proves, once the request's
   * typed fields are found equal to its signed body (SIGNED_BODY_BINDINGS, ./index.ts). Without: `request.merchantId`, only when the
   * caller's credential is bound to that merchant (`mayActFor`); anyone else is refused whatever id it names.
   * Each accepted request counts against the merchant's request rate.
   * @throws as `authenticateAction`; INVALID_SIGNATURE when the typed request is not the signed one;
   *   MERCHANT_UNAUTHENTICATED without ActionAuth from another caller; IDEMPOTENCY_KEY_INVALID (field
   *   `request_id`) for a signed request_id that is no valid key; RATE_LIMITED
   */
  requireMerchant(request: { $typeName: string; merchantId: string; auth?: ActionAuth }, context: HandlerContext | undefined): Promise<MerchantAct>;
  /**
   * C1 before the password check: merchant headers, the signed body bound to the typed request and, when the body
   * carries the optional `timestamp` (Unix seconds), that timestamp within MERCHANT_LOGIN_WINDOW_SECONDS of this
   * process's clock and the body accepted once: it is recorded until no process could accept its timestamp any more,
   * and a replay is refused. A body without timestamp (the interface's) is checked for everything else and recorded
   * nowhere.
   * @throws DomainError MERCHANT_UNAUTHENTICATED, INVALID_SIGNATURE, VALIDATION_FAILED (an ambiguous parameter),
   *   LOGIN_TIMESTAMP_INVALID, LOGIN_REPLAYED (field `timestamp`)
   */
  authenticateLogin(request: { $typeName: string; envelope?: SignedEnvelope; userName: string; password: string }): Promise<Merchant>;
  /**
   * Area B's proof (interface "Area B", `X-API-Key`): the active merchant owning `api_key`, shared by every Area B
   * service (payins, refunds, events, timeline; payouts). Active merchants are remembered by SHA-256 of their key for
   * AUTH_CACHE_SECONDS (an unknown or suspended key is looked up every time; a suspension announced through
   * `authChanges` empties the cache at once). Unknown keys are counted per key and per client address (src/abuse):
   * past the limit the address's next unknown keys answer RATE_LIMITED; a verified merchant's calls count against its
   * request rate.
   * @throws DomainError UNAUTHENTICATED (unknown or missing key), MERCHANT_SUSPENDED, RATE_LIMITED
   */
  requireApiKey(api_key: string, context: HandlerContext | undefined): Promise<Merchant>;
}
