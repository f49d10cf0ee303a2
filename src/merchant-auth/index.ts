/**
 * Merchant authentication, shared by every Area C service (interface "Authentication / Area C", platform decisions
 * §7): merchant headers, the signed body verified with the merchant's stored public key and bound to the typed
 * request (SIGNED_BODY_BINDINGS, below), the API login (an optional signed timestamp: a body carrying one is accepted
 * within its window and once), opaque session
 * tokens (stored as SHA-256 hex, lifetime MERCHANT_SESSION_TTL_SECONDS), and the one `requireMerchant` every service
 * calls. No service acts for a merchant id the caller merely asserts: the merchant is the one whose headers, session
 * and signature verify, and the request does only what that signed body says; a request without the merchant's
 * proof is accepted only from a caller whose credential is bound to that merchant (`mayActFor`).
 *
 * Area B's proof is the merchant's API key (`requireApiKey`): one cache of keys for every Area B service.
 *
 * Order of checks on every call: merchant headers (401) → session token (401, /do-action only) → the body a JSON
 * object, sign_type, no ambiguous parameter, sign (400 on `sign` / `sign_type` / the parameter) → the typed request
 * equals the signed body (400 `sign`) → the service's own fields.
 */
import { LRUCache } from 'lru-cache';
import type { Knex } from 'knex';
import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import { randomToken, sha256Hex } from '../crypto/secrets';
import { ambiguousParameters, canonicalQueryString, SIGN_TYPE_RSA2, verifyRsa2 } from '../crypto/rsa2';
import { problem } from '../field-problems';
import { COMMON_REASONS, invalidFields, reasonError, type DomainError, type FieldViolations } from '../errors';
import type { AbuseLimits } from '../abuse';
import { changeAwareCache, type AuthChanges, type ChangeAwareCache } from '../auth-changes';
import { AmountError, isCurrency, isLosslessNumber, parseJsonLossless, readAmount, type Currency } from '../money';
import { authenticateMerchant, findMerchantByApiKey, getMerchant, type Merchant } from '../onboarding/merchants';
import { callerOf, mayActFor } from '../rpc/caller';
import { clientAddressOf } from '../rpc/client-address';
import { exceedsJsonDepth } from '../text';
import { MERCHANT_AUTH_REASONS } from './reasons';
import type { Envelope, MerchantAuth, SignedBody } from './types';

export * from './reasons';
export type { Envelope, MerchantAct, MerchantAuth, SignedBody } from './types';

/** Most merchants and sessions one process remembers. */
const AUTH_CACHE_MAX = 10_000;

/** The field problems merchant authentication answers (rendered by the façade's Area C contract). */
const AUTH_PROBLEMS = {
  merchant: problem('merchant_credentials'),
  tokenMissing: problem('session_missing'),
  tokenInvalid: problem('session_invalid'),
  tokenExpired: problem('session_expired'),
  sign: problem('sign'),
  signType: problem('sign_type'),
  separatorInValue: problem('separator_in_value'),
  separatorInName: problem('separator_in_name'),
  loginReplayed: problem('login_replayed'),
} as const;

/**
 * Checks the merchant headers.
 * @throws DomainError unauthenticated MERCHANT_UNAUTHENTICATED (field `merchant`).
 */
export async function authenticateEnvelope(database: Knex, envelope: Envelope | undefined): Promise<Merchant> {
  const merchant = envelope?.merchantId
    ? await authenticateMerchant(database, { merchant_id: envelope.merchantId, merchant_secret_key: envelope.merchantSecretKey })
    : undefined;
  if (!merchant || !envelope) {
    throw reasonError(MERCHANT_AUTH_REASONS, 'MERCHANT_UNAUTHENTICATED', 'merchant unauthenticated', { merchant: [AUTH_PROBLEMS.merchant] });
  }
  return merchant;
}

/** Most parsed merchant public keys one process remembers. */
const PUBLIC_KEY_CACHE_MAX = 1000;

/** Parsed public keys by PEM, for one MerchantAuth (parsing a PEM costs more than verifying). */
function publicKeyCache(): (pem: string) => KeyObject | string {
  const keys = new LRUCache<string, KeyObject>({ max: PUBLIC_KEY_CACHE_MAX });
  return (pem) => {
    let key = keys.get(pem);
    if (!key) {
      try {
        key = createPublicKey(pem);
      } catch {
        return pem; // verifyRsa2 answers false
      }
      keys.set(pem, key);
    }
    return key;
  };
}

function invalidSign(): DomainError {
  return reasonError(MERCHANT_AUTH_REASONS, 'INVALID_SIGNATURE', 'invalid sign', { sign: [AUTH_PROBLEMS.sign] });
}

/** The body as a JSON object (parsed losslessly), else undefined. */
function parseBody(text: string): Record<string, unknown> | undefined {
  try {
    const value = parseJsonLossless(text);
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && !exceedsJsonDepth(value)) return value as Record<string, unknown>;
  } catch {
    // not JSON
  }
  return undefined;
}

/**
 * Parses the envelope's body, checks sign_type, refuses a parameter the canonical string could not tell apart from
 * others (§7: a name holding `&` or `=`, a value holding `&` followed by `=`), and verifies sign over the canonical
 * string the platform computes itself with the merchant's public key.
 * @throws DomainError INVALID_SIGNATURE (field `sign` or `sign_type`); VALIDATION_FAILED on each ambiguous parameter
 */
function verifySignature(publicKeyOf: (pem: string) => KeyObject | string, merchant: Merchant, envelope: Envelope): SignedBody {
  const parameters = parseBody(envelope.body);
  if (!parameters) throw invalidSign();
  const sign = typeof parameters.sign === 'string' ? parameters.sign : '';
  if (parameters.sign_type !== SIGN_TYPE_RSA2) {
    throw reasonError(MERCHANT_AUTH_REASONS, 'INVALID_SIGNATURE', 'invalid sign_type', {
      sign_type: [AUTH_PROBLEMS.signType],
      ...(sign ? {} : { sign: [AUTH_PROBLEMS.sign] }),
    });
  }
  const ambiguous = ambiguousParameters(parameters);
  if (ambiguous.length > 0) {
    const problems: FieldViolations = {};
    for (const name of ambiguous) problems[name] = [name.includes('&') || name.includes('=') ? AUTH_PROBLEMS.separatorInName : AUTH_PROBLEMS.separatorInValue];
    throw invalidFields(problems);
  }
  if (!sign || !verifyRsa2(canonicalQueryString(parameters), sign, publicKeyOf(merchant.public_key_pem))) throw invalidSign();
  return { parameters, id: createHash('sha256').update(Buffer.from(sign, 'base64')).digest('hex') };
}

/**
 * The typed request must say what its signed body says (SIGNED_BODY_BINDINGS).
 * @throws DomainError INVALID_SIGNATURE (field `sign`)
 */
function bindToSignedBody(request: { $typeName: string }, body: SignedBody): void {
  if (unboundFields(request, body.parameters).length > 0) throw invalidSign();
}

/** The body's `request_id` as text: "" when absent, null when it is no text (neither string nor number). */
function requestIdOf(parameters: Record<string, unknown>): string | null {
  const value = parameters.request_id;
  if (value === undefined || value === null || value === '') return '';
  return isLosslessNumber(value) ? value.toString() : typeof value === 'string' ? value : null;
}

interface SessionRow {
  merchant_id: string;
  expires_at: Date;
}

/** Opens a session for the merchant; returns the opaque token (only its hash is stored). */
export async function openSession(database: Knex, merchantId: string, ttlSeconds: number): Promise<string> {
  const token = randomToken(32);
  // Housekeeping: the merchant's expired sessions are useless; drop them when it logs in again.
  await database('merchant_sessions').where({ merchant_id: merchantId }).andWhere('expires_at', '<', new Date()).delete();
  await database('merchant_sessions').insert({
    token_hash: sha256Hex(token),
    merchant_id: merchantId,
    expires_at: new Date(Date.now() + ttlSeconds * 1000),
  });
  return token;
}

/**
 * The session must exist, belong to `merchantId` and not be expired. @returns its expiry.
 * @throws DomainError unauthenticated SESSION_MISSING | SESSION_INVALID | SESSION_EXPIRED (field `token`)
 */
async function checkSession(database: Knex, merchantId: string, token: string, sessions: ChangeAwareCache<SessionRow>): Promise<Date> {
  if (!token) throw reasonError(MERCHANT_AUTH_REASONS, 'SESSION_MISSING', 'token missing', { token: [AUTH_PROBLEMS.tokenMissing] });
  const token_hash = sha256Hex(token);
  const row = await sessions.get(
    token_hash,
    async () => (await database('merchant_sessions').where({ token_hash }).first('merchant_id', 'expires_at')) as SessionRow | undefined,
  );
  if (!row || row.merchant_id !== merchantId) {
    throw reasonError(MERCHANT_AUTH_REASONS, 'SESSION_INVALID', 'token invalid', { token: [AUTH_PROBLEMS.tokenInvalid] });
  }
  if (row.expires_at.getTime() <= Date.now()) {
    throw reasonError(MERCHANT_AUTH_REASONS, 'SESSION_EXPIRED', 'token expired', { token: [AUTH_PROBLEMS.tokenExpired] });
  }
  return row.expires_at;
}

/**
 * The signed login's optional `timestamp` (a platform extension; the interface's login body has none): Unix seconds
 * (a JSON integer or a string of digits) within `windowSeconds` of now. @returns the seconds, or undefined when the
 * body carries no timestamp (absent, null or "", which the canonical string drops alike).
 * @throws DomainError LOGIN_TIMESTAMP_INVALID (field `timestamp`) for a timestamp sent that is no Unix time in seconds
 *   or lies outside the window
 */
export function checkLoginTimestamp(parameters: Record<string, unknown>, windowSeconds: number, nowMs = Date.now()): number | undefined {
  const value = parameters.timestamp;
  const fail = (code: string) => reasonError(MERCHANT_AUTH_REASONS, 'LOGIN_TIMESTAMP_INVALID', 'login timestamp invalid', { timestamp: [code] });
  if (value === undefined || value === null || value === '') return undefined;
  const text = isLosslessNumber(value) ? value.toString() : typeof value === 'string' ? value : '';
  if (!/^\d{1,15}$/.test(text)) throw fail(problem('integer'));
  const seconds = Number(text);
  if (Math.abs(nowMs / 1000 - seconds) > windowSeconds) throw fail(problem('timestamp_window', windowSeconds));
  return seconds;
}

/**
 * Builds the process's merchant authentication (at the composition root). Successful lookups are reused for
 * AUTH_CACHE_SECONDS: merchants by (merchant id, SHA-256 of the secret key presented), active ones only, and sessions
 * by token hash; the signature is verified and the session expiry compared on every call. A suspension or any other
 * credential change announced through `authChanges` drops both caches at once in every process. Each cache holds at
 * most 10,000 entries.
 */
export function createMerchantAuth(deps: {
  database: Knex;
  config: { AUTH_CACHE_SECONDS: number; MERCHANT_LOGIN_WINDOW_SECONDS: number };
  authChanges: AuthChanges;
  /** Counts each verified request against the merchant's request rate, and unknown API keys (src/abuse). */
  abuse: Pick<AbuseLimits, 'consumeRequest' | 'beginAttempt'>;
}): MerchantAuth {
  // A suspension (or any credential change) drops the cached lookups at once, in every process.
  const cacheOptions = { ttlSeconds: deps.config.AUTH_CACHE_SECONDS, max: AUTH_CACHE_MAX };
  const merchants = changeAwareCache<Merchant>(deps.authChanges, cacheOptions);
  const sessions = changeAwareCache<SessionRow>(deps.authChanges, cacheOptions);
  const merchantsById = changeAwareCache<Merchant>(deps.authChanges, cacheOptions);
  /** The merchant a bound credential names, when it exists and is active (cached like the other lookups). */
  const activeMerchant = async (merchantId: string): Promise<Merchant | undefined> => {
    const merchant = await merchantsById.get(merchantId, () => getMerchant(deps.database, merchantId), (found) => found.status === 'active');
    return merchant?.status === 'active' ? merchant : undefined;
  };
  const publicKeyOf = publicKeyCache();
  const apiKeys = changeAwareCache<Merchant>(deps.authChanges, cacheOptions);

  /** A failed check throws inside the lookup, so only verified merchant headers are kept. */
  async function merchantOf(envelope: Envelope | undefined): Promise<Merchant> {
    if (!envelope?.merchantId) return authenticateEnvelope(deps.database, envelope);
    const key = `${envelope.merchantId}\u0000${sha256Hex(String(envelope.merchantSecretKey ?? ''))}`;
    return (await merchants.get(key, () => authenticateEnvelope(deps.database, envelope)))!;
  }

  async function authenticateAction(envelope: Envelope | undefined, sessionToken: string): Promise<{ merchantId: string; signed: SignedBody }> {
    const [merchant, session] = await Promise.all([
      merchantOf(envelope).then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      ),
      (envelope?.merchantId
        ? checkSession(deps.database, envelope.merchantId, sessionToken, sessions)
        : Promise.resolve(undefined)
      ).then(
        (expiresAt) => (expiresAt === undefined ? {} : { expiresAt: expiresAt.getTime() }),
        (error: unknown) => ({ error }),
      ),
    ]);
    if ('error' in merchant) throw merchant.error;
    if ('error' in session) throw session.error;
    return { merchantId: merchant.value.id, signed: verifySignature(publicKeyOf, merchant.value, envelope!) };
  }

  /**
   * Records a signed login body; false when it was recorded before and its record still runs. The record lives
   * twice the window past the body's timestamp, so a process whose clock is up to one window ahead still finds it.
   * The merchant's records past their end are deleted in the same statement.
   */
  async function acceptOnce(merchantId: string, signed: SignedBody, timestampSeconds: number): Promise<boolean> {
    const now = new Date();
    const expiresAt = new Date((timestampSeconds + 2 * deps.config.MERCHANT_LOGIN_WINDOW_SECONDS) * 1000);
    const result = await deps.database.raw(
      `WITH purged AS (
         DELETE FROM merchant_login_requests WHERE merchant_id = ? AND expires_at <= ? AND signature_sha256 <> ?
       )
       INSERT INTO merchant_login_requests (merchant_id, signature_sha256, expires_at) VALUES (?, ?, ?)
       ON CONFLICT (merchant_id, signature_sha256) DO UPDATE SET expires_at = EXCLUDED.expires_at
         WHERE merchant_login_requests.expires_at <= ?
       RETURNING signature_sha256`,
      [merchantId, now, signed.id, merchantId, signed.id, expiresAt, now],
    );
    return result.rows.length === 1;
  }

  async function requireApiKey(api_key: string, context: Parameters<MerchantAuth['requireApiKey']>[1]): Promise<Merchant> {
    const merchant = api_key
      ? await apiKeys.get(sha256Hex(api_key), () => findMerchantByApiKey(deps.database, api_key), (found) => found.status === 'active')
      : undefined;
    if (!merchant) {
      // A key is 256 random bits: only a wrong one is counted (a valid key is no guess), and an address past its
      // failures gets RATE_LIMITED instead of another "unknown key". Only a digest of the key names it.
      await (await deps.abuse.beginAttempt('api_key', sha256Hex(api_key).slice(0, 32), clientAddressOf(context))).failed();
      throw reasonError(COMMON_REASONS, 'UNAUTHENTICATED', 'invalid or missing API key');
    }
    if (merchant.status !== 'active') throw reasonError(MERCHANT_AUTH_REASONS, 'MERCHANT_SUSPENDED');
    await deps.abuse.consumeRequest(`merchant:${merchant.id}`);
    return merchant;
  }

  return {
    authenticateAction,
    requireApiKey,

    async requireMerchant(request, context) {
      if (!request.auth) {
        // A bound credential acts for its merchant only while that merchant may act itself (not suspended).
        if (!mayActFor(callerOf(context), { kind: 'merchant', id: request.merchantId }) || !(await activeMerchant(request.merchantId))) {
          throw reasonError(MERCHANT_AUTH_REASONS, 'MERCHANT_UNAUTHENTICATED', 'no merchant credential', { merchant: [AUTH_PROBLEMS.merchant] });
        }
        await deps.abuse.consumeRequest(`merchant:${request.merchantId}`);
        return { merchantId: request.merchantId };
      }
      const { merchantId, signed } = await authenticateAction(request.auth.envelope, request.auth.sessionToken);
      bindToSignedBody(request, signed);
      const requestId = requestIdOf(signed.parameters);
      await deps.abuse.consumeRequest(`merchant:${merchantId}`);
      return { merchantId, signed: { id: signed.id, requestId } };
    },

    async authenticateLogin(request) {
      const merchant = await authenticateEnvelope(deps.database, request.envelope);
      const signed = verifySignature(publicKeyOf, merchant, request.envelope!);
      bindToSignedBody(request, signed);
      // A login without timestamp (the interface's body) leaves no replay record: RSA2 signatures are deterministic,
      // so a client logging in again sends the same bytes and must be let in. What a replayed one buys is a session,
      // and a session moves nothing without a freshly signed /do-action body (docs/area-c.md "Login replays").
      const timestamp = checkLoginTimestamp(signed.parameters, deps.config.MERCHANT_LOGIN_WINDOW_SECONDS);
      if (timestamp !== undefined && !(await acceptOnce(merchant.id, signed, timestamp))) {
        throw reasonError(MERCHANT_AUTH_REASONS, 'LOGIN_REPLAYED', 'signed login replayed', { timestamp: [AUTH_PROBLEMS.loginReplayed] });
      }
      return merchant;
    },
  };
}

// ---- What binds a request to its signed body ----

/**
 * What binds an Area C request to the body its merchant signed (platform decisions §7): the one table of every RPC
 * that carries the merchant's proof (ActionAuth or, for Login, SignedEnvelope), found by the request's `$typeName`.
 * For each, the `service` its signed body must name and, for each typed field of the request, the body parameter it
 * is read from and how (the rules of the façade's field readers, rest-facade/merchant/*-services.ts, which produce
 * the typed fields from the same body). A request whose typed fields say anything the signed body does not is refused
 * as a bad signature: holding a transport credential and one captured signed request buys no other action.
 *
 * Fields a request carries beside them and that no body holds: `merchant_id` (the merchant is the one the proof
 * verifies), `auth` / `envelope` (the proof itself) and `idempotency_key` (the unsigned header, which may only
 * narrow; docs/idempotency.md). Every other field of such a request must be listed here
 * (test/unit/signed-body-bindings.test.ts walks the generated descriptors).
 */

/** How one typed field is read from its body parameter. */
export type FieldBinding =
  /** Text (a JSON string as it is, a JSON number as written); absent, null, "" and blank text are "". */
  | { kind: 'text'; parameter: string }
  /** Minor units of the body's `currency` parameter (USD when that names no currency); absent is 0. */
  | { kind: 'amount'; parameter: string; currency: string }
  /** An integer (JSON integer or digit string); absent is `absent`, the documented default the façade sends. */
  | { kind: 'integer'; parameter: string; absent: number }
  /** An event seq as a bigint (JSON integer or digit string, up to 19 digits); absent is 0. */
  | { kind: 'seq'; parameter: string };

export interface SignedAction {
  /** The `service` the signed body names; null for a login body, which names none. */
  service: string | null;
  /** Typed field (protobuf-es local name) → where the signed body holds it. */
  fields: Readonly<Record<string, FieldBinding>>;
}

/**
 * Request fields that are not read from the signed body (see above). `proof` is the proof itself where it is an
 * owner's proof (payments.events.v1.OwnerProof, holding ActionAuth); `partnerId` and `dashboardSession` are the
 * TimelineService's other ways to name its viewer, never read when an owner's proof is present.
 */
export const UNBOUND_FIELDS: ReadonlySet<string> = new Set(['merchantId', 'auth', 'envelope', 'idempotencyKey', 'proof', 'partnerId', 'dashboardSession']);

const text = (parameter: string): FieldBinding => ({ kind: 'text', parameter });
const amount = (parameter: string, currency = 'currency'): FieldBinding => ({ kind: 'amount', parameter, currency });
const integer = (parameter: string, absent: number): FieldBinding => ({ kind: 'integer', parameter, absent });
const seq = (parameter: string): FieldBinding => ({ kind: 'seq', parameter });

const USER_FIELDS = {
  phoneNumber: text('phone_number'),
  email: text('email'),
  firstName: text('first_name'),
  lastName: text('last_name'),
  address: text('address'),
  currency: text('currency'),
  birthday: text('birthday'),
  gender: text('gender'),
  description: text('description'),
};

const DEPOSIT_FIELDS = {
  token: text('token'),
  preOrderToken: text('pre_order_token'),
  amountUnits: amount('amount'),
  currency: text('currency'),
  userId: text('user_id'),
};

/** Request `$typeName` → what its signed body must say. */
export const SIGNED_BODY_BINDINGS: Readonly<Record<string, SignedAction>> = {
  'payments.wallet.v1.LoginRequest': { service: null, fields: { userName: text('user_name'), password: text('password') } },
  'payments.wallet.v1.ListFeesRequest': { service: 'list_fees', fields: {} },
  'payments.wallet.v1.GeneratePreOrderTokenRequest': {
    service: 'generate_pre_order_token',
    fields: {
      outTradeNo: text('out_trade_no'),
      sellerCode: text('seller_code'),
      description: text('description'),
      amountUnits: amount('amount'),
      currency: text('currency'),
      redirectUrl: text('redirect_url'),
      commissionRate: text('commission_rate'),
      callBackUrl: text('call_back_url'),
    },
  },
  'payments.wallet.v1.CreateUserRequest': { service: 'create_user', fields: USER_FIELDS },
  'payments.wallet.v1.UpdateUserRequest': { service: 'update_user', fields: { userId: text('user_id'), ...USER_FIELDS } },
  'payments.wallet.v1.PayByTokenRequest': { service: 'pay_by_token', fields: { preOrderToken: text('pre_order_token'), userId: text('user_id') } },
  'payments.wallet.v1.TransferRequest': {
    service: 'transfer',
    fields: {
      fromUserId: text('from_user_id'),
      toUserId: text('to_user_id'),
      amountUnits: amount('amount'),
      currency: text('currency'),
      feesAmountUnits: amount('fees_amount'),
      feesCurrency: text('fees_currency'),
    },
  },
  // The documented defaults of list_banks (docs/area-c.md), which the façade sends when the body has none.
  'payments.wallet.v1.ListBanksRequest': { service: 'list_banks', fields: { page: integer('page', 1), perPage: integer('per_page', 20) } },
  'payments.wallet.v1.BlockMoneyRequest': {
    service: 'block_money',
    fields: { userToken: text('user_token'), amountUnits: amount('amount'), currency: text('currency'), reference: text('reference') },
  },
  'payments.wallet.v1.CancelBlockMoneyRequest': { service: 'cancel_block_money', fields: { transactionRef: text('transaction_ref') } },
  'payments.deposit.v1.DepositByLocalCardRequest': { service: 'deposit_by_local_card', fields: DEPOSIT_FIELDS },
  'payments.deposit.v1.DepositByBankAccountRequest': { service: 'deposit_by_bank_account', fields: DEPOSIT_FIELDS },
  'payments.deposit.v1.DepositByVisaMasterRequest': { service: 'deposit_by_visa_master', fields: { ...DEPOSIT_FIELDS, securityCode: text('security_code') } },
  'payments.deposit.v1.ConfirmPaymentRequest': {
    service: 'confirm_payments',
    fields: { userId: text('user_id'), token: text('token'), password: text('password') },
  },
  // A platform extension (docs/refunds.md "Area C"); amount absent is 0 (everything still refundable).
  'payments.deposit.v1.RefundDepositRequest': { service: 'refund_deposit', fields: { reference: text('reference'), amountUnits: amount('amount'), reason: text('reason') } },
  'payments.deposit.v1.ListDepositRefundsRequest': { service: 'refund_deposit_status', fields: { refundReference: text('refund_reference'), reference: text('reference') } },
  // Platform extensions (docs/payouts.md "Bank payouts").
  'payments.payout.v1.PayoutToBankRequest': {
    service: 'payout_to_bank',
    fields: { userId: text('user_id'), token: text('token'), amountUnits: amount('amount'), currency: text('currency') },
  },
  'payments.payout.v1.GetBankPayoutStatusRequest': { service: 'payout_status', fields: { payoutReference: text('payout_reference') } },
  'payments.instrument.v1.TokenizeLocalCardRequest': {
    service: 'tokenize_local_card',
    fields: { userId: text('user_id'), holderName: text('holder_name'), bankId: text('bank_id'), bankCode: text('bank_code') },
  },
  'payments.instrument.v1.TokenizeBankAccountRequest': {
    service: 'tokenize_bank_account',
    fields: { userId: text('user_id'), holderName: text('holder_name'), bankId: text('bank_id'), bankNumber: text('bank_number'), callBack: text('call_back') },
  },
  'payments.instrument.v1.TokenizeVisaMasterRequest': {
    service: 'tokenize_visa_master',
    fields: { userId: text('user_id'), holderName: text('holder_name'), sourceOfFunds: text('sourceOfFunds') },
  },
  // Read-only services whose proof travels as an owner's proof (payments.events.v1.OwnerProof `area_c`): the events
  // page's query (ListEventsRequest.query) and the timeline's request, with the documented defaults the façade sends.
  'payments.events.v1.EventsQuery': {
    service: 'list_events',
    fields: { after: seq('after'), limit: integer('limit', 100), type: text('type'), subject: text('subject') },
  },
  'payments.timeline.v1.GetPaymentTimelineRequest': {
    service: 'list_timeline',
    fields: { reference: text('reference'), maxPerSource: integer('max_per_source', 0) },
  },
};

/** Never equal to a typed value: the body holds something no reader turns into one. */
const UNREADABLE = Symbol('unreadable');

function absent(value: unknown): boolean {
  return value === undefined || value === null || value === '';
}

/** The typed value the body parameter stands for, as the façade's readers produce it, or UNREADABLE. */
function expected(binding: FieldBinding, body: Record<string, unknown>): string | bigint | number | typeof UNREADABLE {
  const value = Object.hasOwn(body, binding.parameter) ? body[binding.parameter] : undefined;
  switch (binding.kind) {
    case 'text':
      if (absent(value)) return '';
      if (typeof value === 'string') return value.trim() === '' ? '' : value;
      return isLosslessNumber(value) ? value.toString() : UNREADABLE;
    case 'integer': {
      if (absent(value)) return binding.absent;
      const digits = isLosslessNumber(value) ? value.toString() : typeof value === 'string' ? value : '';
      return /^-?\d{1,9}$/.test(digits) ? Number(digits) : UNREADABLE;
    }
    case 'seq': {
      if (absent(value)) return 0n;
      const digits = isLosslessNumber(value) ? value.toString() : typeof value === 'string' ? value : '';
      return /^\d{1,19}$/.test(digits) ? BigInt(digits) : UNREADABLE;
    }
    case 'amount': {
      if (absent(value)) return 0n;
      const currencyText = body[binding.currency];
      const currency: Currency = isCurrency(currencyText) ? currencyText : 'USD';
      // The signature covers a JSON number as a double writes it (§7) and this reads its exact decimal: they agree
      // for every accepted amount (at most MAX_AMOUNT_UNITS, 15 significant digits, which a double holds exactly).
      try {
        return readAmount(value, currency, { allowZero: true, field: binding.parameter });
      } catch (error) {
        if (error instanceof AmountError) return UNREADABLE;
        throw error;
      }
    }
  }
}

/**
 * The names of the typed fields of `request` that differ from what the signed `body` says (empty when bound), or
 * `['service']` when the body names another service. @throws Error when `request` has no entry in the table.
 */
export function unboundFields(request: { $typeName: string }, body: Record<string, unknown>): string[] {
  const action = SIGNED_BODY_BINDINGS[request.$typeName];
  if (!action) throw new Error(`${request.$typeName} has no signed-body binding (SIGNED_BODY_BINDINGS of src/merchant-auth)`);
  const service = Object.hasOwn(body, 'service') ? body.service : undefined;
  if (action.service === null ? !absent(service) : service !== action.service) return ['service'];
  const typed = request as unknown as Record<string, unknown>;
  return Object.entries(action.fields)
    .filter(([field, binding]) => {
      const value = typed[field] ?? (binding.kind === 'text' ? '' : undefined);
      return expected(binding, body) !== value;
    })
    .map(([field]) => field);
}
