/**
 * Partners (Area A callers). A partner authenticates with four credentials: `partner-id` and
 * `partner-secret-key` headers plus `user_name` and `password` in the A1 body. The secret key is stored as SHA-256
 * hex, the password as salted scrypt; the RSA public key (2048 bits or more) verifies the partner's request
 * signatures. Each partner has one USD `partner_float` ledger account that A transfers are paid from.
 */
import type { Knex } from 'knex';
import { COMMON_REASONS, reasonError } from '../errors';
import { constantTimeEqual, hashPassword, matchesSha256, randomAlphanumeric, randomToken, sha256Hex, verifyPassword } from '../crypto/secrets';
import type { PlatformDeps } from '../platform-deps';
import { MAX_AMOUNT_UNITS } from '../money';
import { normalizeRsaPublicKey, notFound, requireText } from './common';

export interface Partner {
  id: string;
  name: string;
  status: 'active' | 'suspended';
  public_key_pem: string;
  /** Ledger account, kind partner_float, USD. */
  float_account_id: string;
  created_at: Date;
}

/** Shown once, at creation; only hashes are stored. */
export interface PartnerCredentials {
  partner_id: string;
  partner_secret_key: string;
  user_name: string;
  password: string;
}

interface PartnerRow {
  id: string;
  name: string;
  status: 'active' | 'suspended';
  public_key_pem: string;
  secret_key_sha256: string;
  user_name: string;
  password_hash: string;
  float_account_id: string;
  created_at: Date;
}

function toPartner(row: PartnerRow): Partner {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    public_key_pem: row.public_key_pem,
    float_account_id: row.float_account_id,
    created_at: row.created_at,
  };
}

/**
 * Creates a partner with fresh credentials and a USD partner_float account; when `float_units` (USD minor units) is
 * given and positive, credits the float from the platform settlement account (idempotency key
 * `partner:<id>:initial-float`, its metadata naming `credential_id` when an RPC caller funded it), all in one database
 * transaction.
 * @throws DomainError invalid_argument (name, public_key_pem INVALID_PUBLIC_KEY, float INVALID_AMOUNT)
 */
export async function createPartner(
  deps: PlatformDeps,
  input: { name: string; public_key_pem: string; float_units?: bigint; credential_id?: string },
): Promise<{ partner: Partner; credentials: PartnerCredentials }> {
  const name = requireText(input.name, 'name');
  const publicKeyPem = normalizeRsaPublicKey(input.public_key_pem);
  const floatUnits = input.float_units ?? 0n;
  if (floatUnits < 0n || floatUnits > MAX_AMOUNT_UNITS) {
    throw reasonError(COMMON_REASONS, 'INVALID_AMOUNT', 'float must be between 0 and the maximum amount', {
      float: ['must be between 0 and the maximum amount'],
    });
  }
  const id = `P${randomAlphanumeric(15)}`;
  const credentials: PartnerCredentials = {
    partner_id: id,
    partner_secret_key: randomToken(32),
    user_name: `partner_${id.slice(1).toLowerCase()}`,
    password: randomToken(18),
  };
  const passwordHash = await hashPassword(credentials.password);
  const row = await deps.database.transaction(async (trx) => {
    const account = await deps.ledger.openAccount({ owner_type: 'partner', owner_id: id, currency: 'USD', kind: 'partner_float' }, trx);
    const [inserted] = (await trx('partners')
      .insert({
        id,
        name,
        public_key_pem: publicKeyPem,
        secret_key_sha256: sha256Hex(credentials.partner_secret_key),
        user_name: credentials.user_name,
        password_hash: passwordHash,
        float_account_id: account.id,
      })
      .returning('*')) as PartnerRow[];
    if (floatUnits > 0n) {
      await deps.ledger.transfer(
        {
          idempotency_key: `partner:${id}:initial-float`,
          description: `initial float of partner ${id}`,
          postings: [
            { platform: 'settlement', currency: 'USD', amount_units: -floatUnits },
            { account_id: account.id, amount_units: floatUnits },
          ],
          // Funding a float mints money: the ledger names who did it, as an operator credit does.
          metadata: { partner_id: id, source: 'onboarding', ...(input.credential_id ? { credential_id: input.credential_id } : {}) },
        },
        trx,
      );
    }
    return inserted!;
  });
  return { partner: toPartner(row), credentials };
}

/** The partner, or undefined when unknown. */
export async function getPartner(database: Knex, partner_id: string): Promise<Partner | undefined> {
  const row = (await database('partners').where({ id: partner_id }).first()) as PartnerRow | undefined;
  return row ? toPartner(row) : undefined;
}

/**
 * Checks all four credentials (Area A, A1) in constant time: every comparison runs (an unknown partner is checked
 * against dummy values) and a password hash is always verified.
 * @returns the partner, or undefined when any credential is wrong or the partner is suspended.
 */
export async function authenticatePartner(
  database: Knex,
  input: { partner_id: string; partner_secret_key: string; user_name: string; password: string },
): Promise<Partner | undefined> {
  const row =
    typeof input.partner_id === 'string' && input.partner_id.length <= 64
      ? ((await database('partners').where({ id: input.partner_id }).first()) as PartnerRow | undefined)
      : undefined;
  const secretOk = matchesSha256(String(input.partner_secret_key ?? ''), row?.secret_key_sha256 ?? sha256Hex(randomToken(8)));
  const userOk = constantTimeEqual(String(input.user_name ?? ''), row?.user_name ?? randomToken(8));
  const passwordOk = await verifyPassword(String(input.password ?? ''), row?.password_hash);
  if (!row || !secretOk || !userOk || !passwordOk || row.status !== 'active') return undefined;
  return toPartner(row);
}

/**
 * Suspends or resumes a partner. Token requests read the partner's status; gateway calls read it through a cache
 * that the caller empties in every process by announcing the change in the same transaction
 * (`authChanges.publish(trx, { partner_id })`), so the change applies on the partner's very next request (issued
 * access tokens included).
 * @throws DomainError not_found PARTNER_NOT_FOUND
 */
export async function setPartnerStatus(database: Knex, partner_id: string, status: 'active' | 'suspended'): Promise<Partner> {
  if (partner_id.length === 0 || partner_id.length > 64) throw notFound('PARTNER_NOT_FOUND', 'partner');
  const [row] = (await database('partners').where({ id: partner_id }).update({ status, updated_at: database.fn.now() }).returning('*')) as PartnerRow[];
  if (!row) throw notFound('PARTNER_NOT_FOUND', 'partner');
  return toPartner(row);
}
