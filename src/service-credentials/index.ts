/**
 * Service credentials: who may call the internal Connect RPC (the façade in its own process, the operators' admin
 * CLI, other internal services) and with which scopes.
 *
 * A token reads `pps_<id>_<secret>`: the id names the row, the secret (32 random bytes, base64url) is stored only as
 * its SHA-256 and compared in constant time. A token is shown once, when it is created. Revocation applies on the
 * next call in every process (announced through `AuthChanges`, PostgreSQL LISTEN/NOTIFY).
 *
 * Scopes (src/rpc/auth.ts has the table of which procedure needs which):
 *   admin           operators' work: onboarding, suspensions, balances, the ledger check and reads, reconciliation,
 *                   webhook deliveries, the audit trail
 *   mint            AdminService CreditWallet and a funded partner float: money from the platform's settlement account
 *   credentials     service credentials (create, revoke, list) and data key rotation
 *   ledger-write    LedgerService's writes (transfers and holds between any accounts)
 *   facade          the REST façade: its verified-proof RPCs (Area A's Gateway and token, Areas B and C)
 *   partner:<id>    acts for that partner without the partner's own proof (the typed TransferService RPCs)
 *   merchant:<id>   acts for that merchant without the merchant's own proof
 *
 * A credential bound to an owner acts for that owner only; every one of its calls is audited (src/rpc/audit.ts).
 */
import { changeAwareCache, type AuthChanges } from '../auth-changes';
import { matchesSha256, randomHex, randomToken, sha256Hex } from '../crypto/secrets';
import type { Knex } from '../db/knex';

/** The scopes of operators' and the façade's powers (not bound to an owner). */
export const FIXED_SCOPES = ['admin', 'mint', 'credentials', 'ledger-write', 'facade'] as const;
export type FixedScope = (typeof FIXED_SCOPES)[number];
/** A scope binding a credential to one owner: it acts for that partner or merchant only. */
export type OwnerScope = `partner:${string}` | `merchant:${string}`;
export type ServiceScope = FixedScope | OwnerScope;

/** Every operator power: the bootstrap credential of a deployment and the dev stack's operator hold them all. */
export const OPERATOR_SCOPES: readonly FixedScope[] = ['admin', 'mint', 'credentials'];

/** `partner:<id>` or `merchant:<id>`, the id as onboarding makes them (letters, digits; at most 64). */
const OWNER_SCOPE = /^(partner|merchant):([A-Za-z0-9]{1,64})$/;

/** Who called: a verified service credential or a verified client certificate. Never holds a secret. */
export interface CallerIdentity {
  /** Credential id (`cred_…`) or `cert:<subject CN>`. */
  id: string;
  name: string;
  scopes: readonly ServiceScope[];
}

export interface CreatedCredential {
  id: string;
  name: string;
  scopes: ServiceScope[];
  /** The bearer token, shown once; only its secret's SHA-256 is stored. */
  token: string;
}

export interface CredentialSummary {
  id: string;
  name: string;
  scopes: ServiceScope[];
  created_at: string;
  revoked_at: string | null;
}

/** Longest token accepted before any lookup (`pps_` + id + `_` + 43-character secret, with room). */
const MAX_TOKEN_LENGTH = 128;
const TOKEN = /^pps_(cred_[0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;
const MAX_NAME_LENGTH = 100;

/** True for a fixed scope or a well-formed owner scope (whether the owner exists is checked at creation). */
export function isServiceScope(value: string): value is ServiceScope {
  return (FIXED_SCOPES as readonly string[]).includes(value) || OWNER_SCOPE.test(value);
}

/** The owner an owner scope names, or undefined for a fixed scope. */
export function ownerOfScope(scope: string): { kind: 'partner' | 'merchant'; id: string } | undefined {
  const match = OWNER_SCOPE.exec(scope);
  return match ? { kind: match[1] as 'partner' | 'merchant', id: match[2]! } : undefined;
}

/** True when `caller` holds a scope that binds it to an owner (its calls are audited). */
export function isOwnerBound(caller: Pick<CallerIdentity, 'scopes'>): boolean {
  return caller.scopes.some((scope) => ownerOfScope(scope) !== undefined);
}

/** Thrown by `createServiceCredential` for a bad name or scope; `field` names the request field. */
export class CredentialInputError extends Error {
  constructor(
    readonly field: 'name' | 'scopes',
    message: string,
  ) {
    super(message);
    this.name = 'CredentialInputError';
  }
}

const SCOPE_LIST = `${FIXED_SCOPES.join(', ')}, partner:<id>, merchant:<id>`;

/**
 * Creates a credential with `scopes` (at least one; each a fixed scope, or an owner scope naming an existing partner
 * or merchant) and returns its token once.
 * @throws CredentialInputError on an empty, unknown or malformed scope, an owner scope naming no existing owner, or a
 *   name that is empty or longer than 100 characters
 */
export async function createServiceCredential(
  database: Knex,
  input: { name: string; scopes: readonly string[] },
): Promise<CreatedCredential> {
  const scopes = [...new Set(input.scopes)];
  if (input.name.length === 0 || input.name.length > MAX_NAME_LENGTH) throw new CredentialInputError('name', 'name must be 1 to 100 characters');
  if (scopes.length === 0) throw new CredentialInputError('scopes', `at least one scope is required (scopes: ${SCOPE_LIST})`);
  const unknown = scopes.filter((scope) => !isServiceScope(scope));
  if (unknown.length) throw new CredentialInputError('scopes', `unknown scope ${unknown.join(', ')} (scopes: ${SCOPE_LIST})`);
  for (const scope of scopes) {
    const owner = ownerOfScope(scope);
    if (!owner) continue;
    const found = await database(owner.kind === 'partner' ? 'partners' : 'merchants').where({ id: owner.id }).first('id');
    if (!found) throw new CredentialInputError('scopes', `${scope}: no such ${owner.kind}`);
  }
  const id = `cred_${randomHex(8)}`;
  const secret = randomToken(32);
  await database('service_credentials').insert({ id, name: input.name, scopes, secret_hash: sha256Hex(secret) });
  return { id, name: input.name, scopes: scopes as ServiceScope[], token: `pps_${id}_${secret}` };
}

/** Revokes credential `id`: refused on the next call in every process. @returns false when no live credential has it. */
export async function revokeServiceCredential(database: Knex, authChanges: AuthChanges, id: string): Promise<boolean> {
  return database.transaction(async (trx) => {
    const updated = await trx('service_credentials').where({ id }).whereNull('revoked_at').update({ revoked_at: trx.fn.now() });
    if (updated === 0) return false;
    await authChanges.publish(trx, { credential_id: id });
    return true;
  });
}

export async function listServiceCredentials(database: Knex): Promise<CredentialSummary[]> {
  const rows = await database('service_credentials').select('id', 'name', 'scopes', 'created_at', 'revoked_at').orderBy('created_at');
  return rows.map((row: { id: string; name: string; scopes: ServiceScope[]; created_at: Date; revoked_at: Date | null }) => ({
    id: row.id,
    name: row.name,
    scopes: row.scopes,
    created_at: row.created_at.toISOString(),
    revoked_at: row.revoked_at ? row.revoked_at.toISOString() : null,
  }));
}

/** True when at least one credential is live (start-up refuses a non-loopback RPC_HOST with none and no mTLS). */
export async function hasLiveServiceCredential(database: Knex): Promise<boolean> {
  const row = await database('service_credentials').whereNull('revoked_at').first('id');
  return row !== undefined;
}

export interface CredentialVerifier {
  /** The caller behind `token`, or undefined for a malformed, unknown, wrong or revoked token (one answer for all). */
  verify(token: string): Promise<CallerIdentity | undefined>;
}

/** What verification reads of an unrevoked credential. */
interface CredentialRow {
  id: string;
  name: string;
  scopes: ServiceScope[];
  secret_hash: string;
}

/** Most credentials one process remembers. */
const CREDENTIAL_CACHE_MAX = 10_000;

/**
 * Verifies bearer tokens against `service_credentials`. A credential's row is remembered for at most
 * `cacheSeconds` and only while `authChanges` is listening (`changeAwareCache`); a revocation drops it in every
 * process at once. The secret is compared with the row's hash on every call.
 */
export function createCredentialVerifier(database: Knex, authChanges: AuthChanges, cacheSeconds: number): CredentialVerifier {
  const rows = changeAwareCache<CredentialRow>(authChanges, { ttlSeconds: cacheSeconds, max: CREDENTIAL_CACHE_MAX });
  return {
    async verify(token) {
      if (token.length > MAX_TOKEN_LENGTH) return undefined;
      const match = TOKEN.exec(token);
      if (!match) return undefined;
      const [, id, secret] = match as unknown as [string, string, string];
      const row = await rows.get(
        id,
        async () =>
          (await database('service_credentials').where({ id }).whereNull('revoked_at').first('id', 'name', 'scopes', 'secret_hash')) as
            | CredentialRow
            | undefined,
      );
      // Unknown ids still cost one hash comparison, so an unknown id and a wrong secret take comparable time.
      const matches = matchesSha256(secret, row?.secret_hash ?? '0'.repeat(64));
      if (!row || !matches) return undefined;
      return { id: row.id, name: row.name, scopes: row.scopes };
    },
  };
}
