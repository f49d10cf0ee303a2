/**
 * A merchant's users (Area C; platform decisions §7 tenant isolation): the one home of the queries that find a
 * merchant's own user (`users` rows with its merchant_id; onboarding creates them), the parties of a transfer (cached),
 * a seller by wallet_ref, and the merchant's API user profile (`merchant_api_users`). A merchant reaches only the
 * users it created; any other id is answered exactly like an unknown one (USER_NOT_FOUND). And the merchant an API
 * user name belongs to (sign-in).
 */
import { changeAwareCache } from '../auth-changes';
import type { Knex } from '../db/knex';
import { randomAlphanumeric } from '../crypto/secrets';
import { reasonError, type DomainError } from '../errors';
import { problem } from '../field-problems';
import { getUser, type User } from '../onboarding/users';
import type { PlatformDeps } from '../platform-deps';
import { MERCHANT_USER_REASONS } from './reasons';

export * from './reasons';

/** USER_NOT_FOUND on the request field `field`. */
export function userNotFound(field: string): DomainError {
  return reasonError(MERCHANT_USER_REASONS, 'USER_NOT_FOUND', `${field} not found`, { [field]: [problem('not_found')] });
}

/** The merchant's own active user, else USER_NOT_FOUND on `field`. */
export async function merchantUser(database: Knex, merchantId: string, userId: string, field: string): Promise<User> {
  const user = /^\d{1,19}$/.test(userId) ? await getUser(database, userId) : undefined;
  if (!user || user.merchant_id !== merchantId || user.status !== 'active') throw userNotFound(field);
  return user;
}

/** The merchant's user whose wallet_ref is `walletRef` (a preorder's seller_code), else undefined. */
export async function findMerchantUserByWalletRef(database: Knex, merchantId: string, walletRef: string): Promise<User | undefined> {
  const row = (await database('users').where({ wallet_ref: walletRef, merchant_id: merchantId }).first('id')) as { id: bigint | string } | undefined;
  return row ? getUser(database, String(row.id)) : undefined;
}

/** What a transfer needs of each party. */
export type TransferParty = Pick<User, 'id' | 'merchant_id' | 'status' | 'currency' | 'wallet_account_id'>;

/** Users ids are 1 to 18 decimal digits (the same ids `getUser` accepts). */
export const USER_ID = /^\d{1,18}$/;

/** The users of `ids` that exist, in one query (one round trip for both parties of a transfer). */
export async function findTransferParties(database: Knex, ids: string[]): Promise<TransferParty[]> {
  const valid = ids.filter((id) => USER_ID.test(id));
  if (valid.length === 0) return [];
  return (await database('users')
    .whereIn('id', valid)
    .select(database.raw('id::text as id'), 'merchant_id', 'status', 'currency', 'wallet_account_id')) as TransferParty[];
}

/** Reads the parties of transfers (see `transferPartyLookup`). */
export type TransferPartyLookup = (ids: string[]) => Promise<TransferParty[]>;

/** Most transfer parties kept in a process's cache. */
const TRANSFER_PARTY_CACHE_MAX = 10_000;

/**
 * The parties of transfers, for AUTH_CACHE_SECONDS: a merchant's users move money again and again, and of what a
 * transfer reads (merchant, currency, wallet account, status) only `status` can change. Active users only; an
 * announced credential change (`authChanges`) empties the cache in every process, and a user made inactive directly
 * in the database applies once its entry expires. Whatever is not cached is read in one query for both parties.
 */
export function transferPartyLookup(deps: Pick<PlatformDeps, 'database' | 'authChanges' | 'config'>): TransferPartyLookup {
  const cache = changeAwareCache<TransferParty>(deps.authChanges, { ttlSeconds: deps.config.AUTH_CACHE_SECONDS, max: TRANSFER_PARTY_CACHE_MAX });
  return async (ids) => {
    const valid = ids.filter((id) => USER_ID.test(id)).map((id) => BigInt(id).toString());
    let missing: Promise<TransferParty[]> | undefined;
    const load = async (id: string) => (await (missing ??= findTransferParties(deps.database, valid))).find((row) => row.id === id);
    const found = await Promise.all(valid.map((id) => cache.get(id, () => load(id), (party) => party.status === 'active')));
    return found.filter((party) => party !== undefined);
  };
}

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
