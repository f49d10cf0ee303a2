/**
 * Merchants: one record holding the Area B credentials (API key stored as SHA-256 hex, HMAC
 * webhook secret AES-256-GCM encrypted under the platform data key, callback URL, signature header, payin fee
 * percent) and the Area C credentials (merchant id, secret key as SHA-256 hex, API user name and scrypt-hashed
 * password, RSA public key supplied or generated). Every merchant gets wallets in USD, KHR and USDT. Also the
 * merchant's API user: the merchant an API user name belongs to (sign-in) and the profile /login shows
 * (`merchant_api_users`).
 */
import { generateKeyPairSync } from 'node:crypto';
import type { Knex } from 'knex';
import { invalidFields } from '../errors';
import {
  constantTimeEqual,
  hashPassword,
  matchesSha256,
  randomAlphanumeric,
  randomHex,
  randomToken,
  sha256Hex,
  verifyPassword,
} from '../crypto/secrets';
import type { Currency } from '../money';
import { openSecret, sealSecret } from '../crypto/data-keys';
import type { PlatformDeps } from '../platform-deps';
import { isHttpUrl } from '../web/url';
import { normalizeRsaPublicKey, notFound, requireText } from './common';
import type { Merchant, MerchantStatus } from './types';

export type { Merchant, MerchantStatus } from './types';

/** The currencies every merchant holds a wallet in. */
export const MERCHANT_WALLET_CURRENCIES: Currency[] = ['USD', 'KHR', 'USDT'];
export const DEFAULT_SIGNATURE_HEADER = 'X-Signature';
export const DEFAULT_PAYIN_FEE_PERCENT = '1.0';

/** Shown once, at creation; only hashes (and the encrypted HMAC secret) are stored. */
export interface MerchantCredentials {
  merchant_id: string;
  merchant_secret_key: string;
  api_user_name: string;
  api_password: string;
  /** Area B `X-API-Key`. */
  api_key: string;
  /** Area B webhook signing secret (hex). */
  hmac_secret: string;
  signature_header: string;
  /**
   * The platform public key a merchant uses (SPKI PEM): the field-encryption key, the one the interface has Area C
   * callers encrypt fields with ("Authentication / Area C" item 6, platform decisions §2 and §7). A merchant verifies
   * no platform signature (Area B webhooks are HMAC), so it is never handed the signing key under this name.
   */
  platform_public_key: string;
  /** The key Area C encrypted fields are encrypted with (SPKI PEM): the same as `platform_public_key`. */
  field_encryption_public_key: string;
  /** PKCS#8 PEM, only when the platform generated the merchant's key pair; never stored. */
  private_key?: string;
}

interface MerchantRow extends Merchant {
  secret_key_sha256: string;
  api_password_hash: string;
  api_key_sha256: string;
  hmac_secret_encrypted: string;
}

function toMerchant(row: MerchantRow): Merchant {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    callback_url: row.callback_url,
    signature_header: row.signature_header,
    payin_fee_percent: row.payin_fee_percent,
    public_key_pem: row.public_key_pem,
    api_user_name: row.api_user_name,
    created_at: row.created_at,
  };
}

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/;
const RESERVED_HEADERS = new Set(['content-type', 'content-length', 'host', 'x-webhook-id', 'x-webhook-event', 'x-webhook-attempt']);

/** The associated data of a merchant's sealed HMAC secret (rotation re-seals with it). */
export function hmacContext(merchant_id: string): string {
  return `merchant:${merchant_id}:hmac_secret`;
}

function validateCallbackUrl(deps: Pick<PlatformDeps, 'outbound'>, text: string | undefined): string {
  const value = requireText(text, 'callback_url', 2048);
  if (!isHttpUrl(value)) throw invalidFields({ callback_url: ['callback_url must be an http or https URL'] });
  const refusal = deps.outbound.checkUrl(value);
  if (refusal) throw invalidFields({ callback_url: [`callback_url must be a public http or https URL (${refusal})`] });
  return value;
}

/** Fee percent as decimal text, 0 to 100 with at most 6 decimals ("1.0", "2.75"). */
function validateFeePercent(text: string | undefined): string {
  const value = (text ?? '').trim() || DEFAULT_PAYIN_FEE_PERCENT;
  const match = /^(\d{1,3})(?:\.(\d{1,6}))?$/.exec(value);
  if (!match || Number(match[1]) > 100 || (Number(match[1]) === 100 && /[1-9]/.test(match[2] ?? ''))) {
    throw invalidFields({ payin_fee_percent: ['payin_fee_percent must be a decimal between 0 and 100 with at most 6 decimals'] });
  }
  return value;
}

/**
 * Creates a merchant with fresh credentials and opens its USD, KHR and USDT wallets in one database transaction.
 * When `public_key_pem` is absent an RSA-2048 key pair is generated and its private key returned once (never stored).
 * @throws DomainError invalid_argument on name, callback_url, signature_header, payin_fee_percent, public_key_pem
 */
export async function createMerchant(
  deps: PlatformDeps,
  input: { name: string; callback_url: string; signature_header?: string; public_key_pem?: string; payin_fee_percent?: string },
): Promise<{ merchant: Merchant; credentials: MerchantCredentials }> {
  const name = requireText(input.name, 'name');
  const callbackUrl = validateCallbackUrl(deps, input.callback_url);
  const signatureHeader = (input.signature_header ?? '').trim() || DEFAULT_SIGNATURE_HEADER;
  if (!HEADER_NAME.test(signatureHeader) || RESERVED_HEADERS.has(signatureHeader.toLowerCase())) {
    throw invalidFields({ signature_header: ['signature_header must be an HTTP header name that the platform does not set itself'] });
  }
  const feePercent = validateFeePercent(input.payin_fee_percent);
  let publicKeyPem: string;
  let privateKey: string | undefined;
  if (input.public_key_pem && input.public_key_pem.trim()) {
    publicKeyPem = normalizeRsaPublicKey(input.public_key_pem);
  } else {
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    publicKeyPem = pair.publicKey.export({ type: 'spki', format: 'pem' }) as string;
    privateKey = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  }
  const id = `M${randomAlphanumeric(15)}`;
  const credentials: MerchantCredentials = {
    merchant_id: id,
    merchant_secret_key: randomToken(32),
    api_user_name: `merchant_${id.slice(1).toLowerCase()}`,
    api_password: randomToken(18),
    api_key: `pk_${randomToken(32)}`,
    hmac_secret: randomHex(32),
    signature_header: signatureHeader,
    platform_public_key: deps.keys.fieldEncryption.publicKeyPem,
    field_encryption_public_key: deps.keys.fieldEncryption.publicKeyPem,
    ...(privateKey ? { private_key: privateKey } : {}),
  };
  const passwordHash = await hashPassword(credentials.api_password);
  const row = await deps.database.transaction(async (trx) => {
    const [inserted] = (await trx('merchants')
      .insert({
        id,
        name,
        callback_url: callbackUrl,
        signature_header: signatureHeader,
        payin_fee_percent: feePercent,
        public_key_pem: publicKeyPem,
        secret_key_sha256: sha256Hex(credentials.merchant_secret_key),
        api_user_name: credentials.api_user_name,
        api_password_hash: passwordHash,
        api_key_sha256: sha256Hex(credentials.api_key),
        hmac_secret_encrypted: sealSecret(deps.keys.dataKeys, credentials.hmac_secret, hmacContext(id)),
      })
      .returning('*')) as MerchantRow[];
    for (const currency of MERCHANT_WALLET_CURRENCIES) {
      await deps.ledger.openAccount({ owner_type: 'merchant', owner_id: id, currency, kind: 'wallet' }, trx);
    }
    return inserted!;
  });
  return { merchant: toMerchant(row), credentials };
}

async function merchantRow(database: Knex, merchant_id: string): Promise<MerchantRow | undefined> {
  if (typeof merchant_id !== 'string' || merchant_id.length === 0 || merchant_id.length > 64) return undefined;
  return (await database('merchants').where({ id: merchant_id }).first()) as MerchantRow | undefined;
}

/** The merchant, or undefined when unknown. */
export async function getMerchant(database: Knex, merchant_id: string): Promise<Merchant | undefined> {
  const row = await merchantRow(database, merchant_id);
  return row ? toMerchant(row) : undefined;
}

/** Most merchants one page of listMerchants holds. */
export const MERCHANT_PAGE_MAX = 500;

/**
 * Merchants newest first (created_at, then id), at most `limit` (1..MERCHANT_PAGE_MAX), only those in `status` when
 * given, after `before_merchant_id` (the last of the previous page; an unknown id gives an empty page). One range scan
 * of merchants_created_at_id_idx (migration 060).
 */
export async function listMerchants(
  database: Knex,
  options: { limit: number; status?: MerchantStatus; before_merchant_id?: string },
): Promise<Merchant[]> {
  const limit = Math.max(1, Math.min(options.limit, MERCHANT_PAGE_MAX));
  const query = database('merchants').orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(limit);
  if (options.status) query.where({ status: options.status });
  if (options.before_merchant_id) {
    const cursor = database('merchants').where({ id: options.before_merchant_id }).select('created_at', 'id');
    query.whereRaw('(created_at, id) < (SELECT created_at, id FROM (?) AS cursor)', [cursor]);
  }
  return ((await query) as MerchantRow[]).map(toMerchant);
}

/** Area B: the merchant whose API key this is (any status: the caller decides about suspended ones), else undefined. */
export async function findMerchantByApiKey(database: Knex, api_key: string): Promise<Merchant | undefined> {
  if (typeof api_key !== 'string' || api_key.length === 0 || api_key.length > 256) return undefined;
  const row = (await database('merchants').where({ api_key_sha256: sha256Hex(api_key) }).first()) as MerchantRow | undefined;
  return row && matchesSha256(api_key, row.api_key_sha256) ? toMerchant(row) : undefined;
}

/**
 * Area C request headers: merchant id and secret key, compared in constant time.
 * @returns the merchant, or undefined when unknown, the key is wrong, or the merchant is suspended.
 */
export async function authenticateMerchant(
  database: Knex,
  input: { merchant_id: string; merchant_secret_key: string },
): Promise<Merchant | undefined> {
  const row = await merchantRow(database, input.merchant_id);
  const ok = matchesSha256(String(input.merchant_secret_key ?? ''), row?.secret_key_sha256 ?? sha256Hex(randomToken(8)));
  return row && ok && row.status === 'active' ? toMerchant(row) : undefined;
}

/**
 * Area C login (C1): the merchant's API user name and password, in constant time (a password hash is always
 * verified). False when either is wrong, the merchant is unknown, or it is suspended.
 */
export async function verifyMerchantApiLogin(
  database: Knex,
  merchant_id: string,
  input: { user_name: string; password: string },
): Promise<boolean> {
  const row = await merchantRow(database, merchant_id);
  const userOk = constantTimeEqual(String(input.user_name ?? ''), row?.api_user_name ?? randomToken(8));
  const passwordOk = await verifyPassword(String(input.password ?? ''), row?.api_password_hash);
  return Boolean(row && userOk && passwordOk && row.status === 'active');
}

/**
 * Area B webhooks: the merchant's HMAC secret, decrypted.
 * @throws DomainError not_found MERCHANT_NOT_FOUND
 */
export async function merchantHmacSecret(deps: PlatformDeps, merchant_id: string): Promise<string> {
  const row = await merchantRow(deps.database, merchant_id);
  if (!row) throw notFound('MERCHANT_NOT_FOUND', 'merchant');
  return openSecret(deps.keys.dataKeys, row.hmac_secret_encrypted, hmacContext(row.id));
}

/**
 * Suspends or resumes a merchant.
 * @throws DomainError not_found MERCHANT_NOT_FOUND; invalid_argument on status
 */
export async function setMerchantStatus(database: Knex, merchant_id: string, status: MerchantStatus): Promise<Merchant> {
  if (status !== 'active' && status !== 'suspended') {
    throw invalidFields({ status: ['must be active or suspended'] });
  }
  if (typeof merchant_id !== 'string' || merchant_id.length === 0 || merchant_id.length > 64) throw notFound('MERCHANT_NOT_FOUND', 'merchant');
  const [row] = (await database('merchants')
    .where({ id: merchant_id })
    .update({ status, updated_at: database.fn.now() })
    .returning('*')) as MerchantRow[];
  if (!row) throw notFound('MERCHANT_NOT_FOUND', 'merchant');
  return toMerchant(row);
}

/** The merchant's API user profile, a row of `merchant_api_users` (one per merchant, made by `merchantApiUser`). */
export interface MerchantApiUser {
  id: bigint;
  merchant_id: string;
  fk_soc: bigint;
  wallet_id: bigint;
  wallet_ref: string;
  avatar: string;
  time_zone: string | null;
}

/** The longest API user name looked up. */
const MAX_API_USER_NAME_LENGTH = 256;

/**
 * The merchant whose API user name this is (exact match; the names are unique), else undefined: how a sign-in with
 * the API user name and password (the dashboard's, as /login's) finds whose password to check.
 */
export async function merchantIdOfApiUserName(database: Knex, userName: string): Promise<string | undefined> {
  if (typeof userName !== 'string' || userName.length === 0 || userName.length > MAX_API_USER_NAME_LENGTH) return undefined;
  const row = (await database('merchants').where({ api_user_name: userName }).first('id')) as { id: string } | undefined;
  return row?.id;
}

/** Default time zone of a merchant API user (Cambodia). */
export const DEFAULT_TIME_ZONE = 'Asia/Phnom_Penh';

/** The merchant's API user profile shown by /login, created on first login. */
export async function merchantApiUser(database: Knex, merchantId: string): Promise<MerchantApiUser> {
  const existing = (await database('merchant_api_users').where({ merchant_id: merchantId }).first()) as MerchantApiUser | undefined;
  if (existing) return existing;
  await database('merchant_api_users')
    .insert({ merchant_id: merchantId, wallet_ref: `M${randomAlphanumeric(15)}`, time_zone: DEFAULT_TIME_ZONE })
    .onConflict('merchant_id')
    .ignore();
  return (await database('merchant_api_users').where({ merchant_id: merchantId }).first()) as MerchantApiUser;
}

// The webhook endpoint a merchant manages (docs/webhooks.md "Managing the endpoint"; migration 053).

/** The associated data of the secret a rotation replaced, sealed while its overlap lasts. */
export function previousHmacContext(merchant_id: string): string {
  return `merchant:${merchant_id}:previous_hmac_secret`;
}

/** The secrets webhooks are signed with now: the current one, and the one it replaced while their overlap lasts. */
export interface SigningSecrets {
  current: string;
  /** The replaced secret, until `previous_until`; absent once the overlap ended (or without a rotation). */
  previous?: string;
  previous_until?: Date;
  /** The endpoint's state, read with the secrets (one query per attempt): disabled since, failing since. */
  disabled_at: Date | null;
  failing_since: Date | null;
}

/**
 * The merchant's signing secrets at `now`. @throws DomainError not_found MERCHANT_NOT_FOUND
 */
export async function merchantSigningSecrets(deps: Pick<PlatformDeps, 'database' | 'keys'>, merchant_id: string, now = new Date()): Promise<SigningSecrets> {
  const row = (await merchantRow(deps.database, merchant_id)) as (MerchantRow & EndpointColumns) | undefined;
  if (!row) throw notFound('MERCHANT_NOT_FOUND', 'merchant');
  const current = openSecret(deps.keys.dataKeys, row.hmac_secret_encrypted, hmacContext(row.id));
  const state = { disabled_at: row.webhook_disabled_at ?? null, failing_since: row.webhook_failing_since ?? null };
  if (!row.previous_hmac_secret_encrypted || !row.previous_hmac_secret_until || row.previous_hmac_secret_until <= now) return { current, ...state };
  return {
    current,
    ...state,
    previous: openSecret(deps.keys.dataKeys, row.previous_hmac_secret_encrypted, previousHmacContext(row.id)),
    previous_until: row.previous_hmac_secret_until,
  };
}

interface EndpointColumns {
  previous_hmac_secret_encrypted: string | null;
  previous_hmac_secret_until: Date | null;
  hmac_secret_rotated_at: Date | null;
  webhook_failing_since: Date | null;
  webhook_disabled_at: Date | null;
}

/** The endpoint's state: when its secret was last rotated, the overlap, failing and disabled times. */
export interface WebhookEndpointState {
  secret_rotated_at: Date | null;
  previous_secret_until: Date | null;
  failing_since: Date | null;
  disabled_at: Date | null;
}

export async function webhookEndpointState(database: Knex, merchant_id: string): Promise<WebhookEndpointState | undefined> {
  const row = (await database('merchants')
    .where({ id: merchant_id })
    .first('hmac_secret_rotated_at', 'previous_hmac_secret_until', 'webhook_failing_since', 'webhook_disabled_at')) as EndpointColumns | undefined;
  if (!row) return undefined;
  const until = row.previous_hmac_secret_until && row.previous_hmac_secret_until > new Date() ? row.previous_hmac_secret_until : null;
  return { secret_rotated_at: row.hmac_secret_rotated_at, previous_secret_until: until, failing_since: row.webhook_failing_since, disabled_at: row.webhook_disabled_at };
}

/**
 * Replaces the merchant's HMAC secret with a fresh one (32 random bytes, hex, as at onboarding), keeping the replaced
 * one for `overlap_seconds` (both signatures are sent meanwhile). A rotation during an overlap replaces the older
 * secret: only the two newest ever sign. @returns the new secret (shown once) and the overlap's end
 * @throws DomainError not_found MERCHANT_NOT_FOUND
 */
export async function rotateMerchantHmacSecret(
  deps: Pick<PlatformDeps, 'database' | 'keys'>,
  merchant_id: string,
  overlap_seconds: number,
): Promise<{ secret: string; previous_until: Date }> {
  return deps.database.transaction(async (trx) => {
    const row = (await trx('merchants').where({ id: merchant_id }).forUpdate().first('id', 'hmac_secret_encrypted')) as Pick<MerchantRow, 'id' | 'hmac_secret_encrypted'> | undefined;
    if (!row) throw notFound('MERCHANT_NOT_FOUND', 'merchant');
    const replaced = openSecret(deps.keys.dataKeys, row.hmac_secret_encrypted, hmacContext(row.id));
    const secret = randomHex(32);
    const now = new Date();
    const previous_until = new Date(now.getTime() + Math.round(overlap_seconds * 1000));
    await trx('merchants')
      .where({ id: merchant_id })
      .update({
        hmac_secret_encrypted: sealSecret(deps.keys.dataKeys, secret, hmacContext(row.id)),
        previous_hmac_secret_encrypted: sealSecret(deps.keys.dataKeys, replaced, previousHmacContext(row.id)),
        previous_hmac_secret_until: previous_until,
        hmac_secret_rotated_at: now,
      });
    return { secret, previous_until };
  });
}

/**
 * Sets the merchant's callback URL (new webhooks go there; those recorded keep theirs). The SSRF rules of
 * onboarding apply. @throws DomainError invalid_argument on callback_url; not_found MERCHANT_NOT_FOUND
 */
export async function setMerchantCallbackUrl(deps: Pick<PlatformDeps, 'database' | 'outbound'>, merchant_id: string, callback_url: string): Promise<string> {
  const url = validateCallbackUrl(deps, callback_url);
  const updated = await deps.database('merchants').where({ id: merchant_id }).update({ callback_url: url });
  if (updated === 0) throw notFound('MERCHANT_NOT_FOUND', 'merchant');
  return url;
}

/** Checks a callback URL as onboarding does (SSRF rules), changing nothing. @throws DomainError invalid_argument */
export function checkCallbackUrl(deps: Pick<PlatformDeps, 'outbound'>, callback_url: string): string {
  return validateCallbackUrl(deps, callback_url);
}

/**
 * Records an attempt's outcome on the merchant's endpoint: a delivered one clears `webhook_failing_since`; a failed one
 * sets it when unset, and disables the endpoint once it is older than `disable_after_seconds`.
 * @returns true when this call disabled the endpoint
 */
export async function recordEndpointOutcome(database: Knex, merchant_id: string, delivered: boolean, disable_after_seconds: number): Promise<boolean> {
  if (delivered) {
    await database('merchants').where({ id: merchant_id }).whereNotNull('webhook_failing_since').update({ webhook_failing_since: null });
    return false;
  }
  await database('merchants').where({ id: merchant_id }).whereNull('webhook_failing_since').update({ webhook_failing_since: database.fn.now() });
  const disabled = await database('merchants')
    .where({ id: merchant_id })
    .whereNull('webhook_disabled_at')
    .whereRaw("webhook_failing_since <= now() - make_interval(secs => ?)", [disable_after_seconds])
    .update({ webhook_disabled_at: database.fn.now() });
  return disabled > 0;
}

/** Enables the merchant's endpoint again (its failing time forgotten). @returns true when it was disabled */
export async function enableWebhookEndpoint(database: Knex | Knex.Transaction, merchant_id: string): Promise<boolean> {
  const changed = await database('merchants').where({ id: merchant_id }).whereNotNull('webhook_disabled_at').update({ webhook_disabled_at: null, webhook_failing_since: null });
  return changed > 0;
}
