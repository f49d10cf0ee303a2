/**
 * Users (Area A receivers, Area C wallet holders): the one home of the `users` table and its queries, a merchant's
 * own users among them. Phone numbers are normalized to E.164 with libphonenumber-js (default region KH) and unique;
 * emails are unique ignoring case. Each user gets a wallet in its currency (ledger account kind `wallet`), an opaque
 * `user_token` (Area C block_money) and a unique `wallet_ref`. Tenant isolation (platform decisions §7): a merchant
 * reaches only the users it created (`merchantUser`, `findMerchantUserByWalletRef`); any other id is answered exactly
 * like an unknown one (USER_NOT_FOUND). The parties of a transfer are read here too, cached (`transferPartyLookup`).
 */
import { problem } from '../field-problems';
import type { Knex } from 'knex';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { changeAwareCache } from '../auth-changes';
import { invalidFields, reasonError, type DomainError, type FieldViolations } from '../errors';
import { randomAlphanumeric, randomToken } from '../crypto/secrets';
import { isCurrency, type Currency } from '../money';
import type { PlatformDeps } from '../platform-deps';
import { isUniqueViolation, notFound } from './common';
import { MERCHANT_USER_REASONS, ONBOARDING_REASONS } from './reasons';

/** User ids are 1 to 18 decimal digits (a bigserial's), the only ids the queries below look up. */
export const USER_ID = /^\d{1,18}$/;

export type UserStatus = 'active' | 'inactive';

export interface User {
  /** Decimal of a bigserial: Area C shows it as an integer. */
  id: string;
  merchant_id: string | null;
  /** E.164, e.g. +85512345678 */
  phone_number: string | null;
  email: string | null;
  first_name: string;
  last_name: string;
  full_name: string;
  address: string | null;
  /** YYYY-MM-DD */
  birthday: string | null;
  gender: string | null;
  description: string | null;
  avatar: string;
  currency: Currency;
  status: UserStatus;
  eligible: boolean;
  /** Opaque, unique. */
  user_token: string;
  /** Unique. */
  wallet_ref: string;
  /** Ledger account (kind wallet) in `currency`. */
  wallet_account_id: string;
  created_at: Date;
  updated_at: Date;
}

interface UserRow extends Omit<User, 'id' | 'full_name'> {
  id: bigint | string;
}

function toUser(row: UserRow): User {
  return {
    id: String(row.id),
    merchant_id: row.merchant_id,
    phone_number: row.phone_number,
    email: row.email,
    first_name: row.first_name,
    last_name: row.last_name,
    full_name: `${row.first_name} ${row.last_name}`.trim(),
    address: row.address,
    birthday: row.birthday,
    gender: row.gender,
    description: row.description,
    avatar: row.avatar,
    currency: row.currency,
    status: row.status,
    eligible: row.eligible,
    user_token: row.user_token,
    wallet_ref: row.wallet_ref,
    wallet_account_id: row.wallet_account_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * Phone in local (0…), international (855…) or +855… form, region KH (libphonenumber-js) → E.164, else undefined.
 * Spaces, dashes and parentheses are ignored; numbers of other countries need their + prefix.
 */
export function normalizePhone(text: string): string | undefined {
  if (typeof text !== 'string') return undefined;
  // Separators only between digits: a sign, a leading or trailing separator or a control character is no phone.
  if (!/^\+?\d(?:[\d ().-]*\d)?$/.test(text)) return undefined;
  const compact = text.replace(/[\s().-]/g, '');
  // The documented forms (platform decisions §6): local 0…, international 855… or +…; nothing else is guessed.
  if (!/^(?:0\d{5,16}|855\d{3,14}|\+\d{6,17})$/.test(compact)) return undefined;
  const candidate = compact.startsWith('855') ? `+${compact}` : compact;
  const parsed = parsePhoneNumberFromString(candidate, 'KH');
  return parsed && parsed.isValid() ? parsed.number : undefined;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const BIRTHDAY = /^(\d{4})-(\d{2})-(\d{2})$/;

function validBirthday(text: string): boolean {
  const match = BIRTHDAY.exec(text);
  if (!match) return false;
  const date = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])));
  return date.toISOString().slice(0, 10) === text && date.getTime() <= Date.now();
}

type OptionalText = 'address' | 'gender' | 'description';
const OPTIONAL_LIMITS: Record<OptionalText, number> = { address: 255, gender: 16, description: 500 };

interface UserFields {
  phone_number?: string;
  email?: string;
  first_name?: string;
  last_name?: string;
  address?: string;
  birthday?: string;
  gender?: string;
  description?: string;
}

/** Validates the given fields; `undefined` means "not given". Returns the column values to write. */
function validateFields(input: UserFields, required: boolean): { values: Record<string, string | null>; violations: FieldViolations } {
  const violations: FieldViolations = {};
  const values: Record<string, string | null> = {};
  const add = (field: string, message: string) => (violations[field] ??= []).push(message);
  if (input.phone_number !== undefined && input.phone_number !== null && String(input.phone_number).trim() !== '') {
    const phone = normalizePhone(String(input.phone_number));
    if (phone) values.phone_number = phone;
    else add('phone_number', problem('invalid_label', 'phone number'));
  } else if (input.phone_number !== undefined) values.phone_number = null;
  if (input.email !== undefined && input.email !== null && input.email.trim() !== '') {
    const email = input.email.trim();
    if (email.length > 254 || !EMAIL.test(email)) add('email', problem('email'));
    else values.email = email;
  } else if (input.email !== undefined) values.email = null;
  for (const field of ['first_name', 'last_name'] as const) {
    const value = input[field];
    if (value === undefined && !required) continue;
    const text = (value ?? '').trim();
    if (!text) add(field, problem('required_label', field.replace('_', ' ')));
    else if (text.length > 96) add(field, problem('max_length_label', field.replace('_', ' '), 96));
    else values[field] = text;
  }
  for (const field of Object.keys(OPTIONAL_LIMITS) as OptionalText[]) {
    const value = input[field];
    if (value === undefined) continue;
    const text = (value ?? '').trim();
    if (text.length > OPTIONAL_LIMITS[field]) add(field, problem('max_length', OPTIONAL_LIMITS[field]));
    else values[field] = text || null;
  }
  if (input.birthday !== undefined) {
    const text = (input.birthday ?? '').trim();
    if (text && !validBirthday(text)) add('birthday', problem('past_date'));
    else values.birthday = text || null;
  }
  return { values, violations };
}

/** Throws the duplicate error when another user (not `except_user_id`) holds the phone number or email. */
async function assertUnique(
  database: Knex,
  values: { phone_number?: string | null; email?: string | null },
  except_user_id?: string,
): Promise<void> {
  const fields: FieldViolations = {};
  if (values.phone_number) {
    const query = database('users').where({ phone_number: values.phone_number });
    if (except_user_id) query.whereNot({ id: except_user_id });
    if (await query.first('id')) fields.phone_number = [problem('taken', 'phone number')];
  }
  if (values.email) {
    const query = database('users').whereRaw('lower(email) = lower(?)', [values.email]);
    if (except_user_id) query.whereNot({ id: except_user_id });
    if (await query.first('id')) fields.email = [problem('taken', 'email')];
  }
  if (fields.phone_number) throw reasonError(ONBOARDING_REASONS, 'DUPLICATE_PHONE_NUMBER', 'phone number already taken', fields);
  if (fields.email) throw reasonError(ONBOARDING_REASONS, 'DUPLICATE_EMAIL', 'email already taken', fields);
}

/** Maps a unique violation of the phone or email index (a concurrent insert) to the duplicate error. */
function duplicateFrom(error: unknown): DomainError | undefined {
  if (isUniqueViolation(error, 'users_phone_number_unique')) {
    return reasonError(ONBOARDING_REASONS, 'DUPLICATE_PHONE_NUMBER', 'phone number already taken', {
      phone_number: [problem('taken', 'phone number')],
    });
  }
  if (isUniqueViolation(error, 'users_email_unique')) {
    return reasonError(ONBOARDING_REASONS, 'DUPLICATE_EMAIL', 'email already taken', { email: [problem('taken', 'email')] });
  }
  return undefined;
}

/**
 * Creates a user and opens its wallet in `currency` (one database transaction). At least one of phone_number and
 * email is required. `eligible` defaults to true (Area A receivers must be eligible).
 * @throws DomainError already_exists DUPLICATE_PHONE_NUMBER (fields { phone_number }) or DUPLICATE_EMAIL
 *   (fields { email }); invalid_argument VALIDATION_FAILED listing every failing field (an invalid phone on
 *   phone_number); not_found MERCHANT_NOT_FOUND for an unknown merchant_id.
 */
export async function createUser(
  deps: PlatformDeps,
  input: UserFields & { first_name: string; last_name: string; currency: Currency; merchant_id?: string; eligible?: boolean },
): Promise<User> {
  const { values, violations } = validateFields(input, true);
  if (!isCurrency(input.currency)) (violations.currency ??= []).push(problem('not_found'));
  if (!values.phone_number && !values.email && !violations.phone_number && !violations.email) {
    violations.phone_number = [problem('required_without', 'phone number', 'email')];
    violations.email = [problem('required_without', 'email', 'phone number')];
  }
  if (Object.keys(violations).length > 0) throw invalidFields(violations);
  if (input.merchant_id !== undefined && input.merchant_id !== null && input.merchant_id !== '') {
    const merchant = await deps.database('merchants').where({ id: String(input.merchant_id).slice(0, 64) }).first('id');
    if (!merchant) throw notFound('MERCHANT_NOT_FOUND', 'merchant');
  }
  await assertUnique(deps.database, values);
  try {
    const row = await deps.database.transaction(async (trx) => {
      const [inserted] = (await trx('users')
        .insert({
          ...values,
          merchant_id: input.merchant_id || null,
          currency: input.currency,
          eligible: input.eligible ?? true,
          user_token: `ut_${randomToken(24)}`,
          wallet_ref: `WR${randomAlphanumeric(14)}`,
        })
        .returning('*')) as UserRow[];
      const account = await deps.ledger.openAccount(
        { owner_type: 'user', owner_id: String(inserted!.id), currency: input.currency, kind: 'wallet' },
        trx,
      );
      const [updated] = (await trx('users').where({ id: inserted!.id }).update({ wallet_account_id: account.id }).returning('*')) as UserRow[];
      return updated!;
    });
    return toUser(row);
  } catch (error) {
    throw duplicateFrom(error) ?? error;
  }
}

/**
 * Updates the given fields of a user of `merchant_id` (null: a user created without a merchant). Fields left
 * undefined stay; an empty optional field is cleared. The user must keep a phone number or an email.
 * @throws the errors of createUser; not_found USER_NOT_FOUND when the user is unknown or belongs to another merchant.
 */
export async function updateUser(
  deps: PlatformDeps,
  input: UserFields & { user_id: string; merchant_id: string | null },
): Promise<User> {
  const current = await getUserRow(deps.database, input.user_id);
  if (!current || (current.merchant_id ?? null) !== (input.merchant_id ?? null)) throw notFound('USER_NOT_FOUND', 'user');
  const { values, violations } = validateFields(input, false);
  const phone = values.phone_number !== undefined ? values.phone_number : current.phone_number;
  const email = values.email !== undefined ? values.email : current.email;
  if (!phone && !email && !violations.phone_number && !violations.email) {
    violations.phone_number = [problem('required_without', 'phone number', 'email')];
  }
  if (Object.keys(violations).length > 0) throw invalidFields(violations);
  await assertUnique(deps.database, values, String(current.id));
  if (Object.keys(values).length === 0) return toUser(current);
  try {
    const [row] = (await deps.database('users')
      .where({ id: String(current.id) })
      .update({ ...values, updated_at: deps.database.fn.now() })
      .returning('*')) as UserRow[];
    return toUser(row!);
  } catch (error) {
    throw duplicateFrom(error) ?? error;
  }
}

async function getUserRow(database: Knex, user_id: string): Promise<UserRow | undefined> {
  if (typeof user_id !== 'string' || !USER_ID.test(user_id)) return undefined;
  return (await database('users').where({ id: user_id }).first()) as UserRow | undefined;
}

/** The user, or undefined when unknown (or not a decimal id). */
export async function getUser(database: Knex, user_id: string): Promise<User | undefined> {
  const row = await getUserRow(database, user_id);
  return row ? toUser(row) : undefined;
}

/** The user with this phone number in any accepted form (see normalizePhone), else undefined. */
export async function findUserByPhone(database: Knex, phone_any_form: string): Promise<User | undefined> {
  const phone = normalizePhone(phone_any_form);
  if (!phone) return undefined;
  const row = (await database('users').where({ phone_number: phone }).first()) as UserRow | undefined;
  return row ? toUser(row) : undefined;
}

/** The user holding this opaque token, else undefined. */
export async function findUserByToken(database: Knex, user_token: string): Promise<User | undefined> {
  if (typeof user_token !== 'string' || user_token.length === 0 || user_token.length > 128) return undefined;
  const row = (await database('users').where({ user_token }).first()) as UserRow | undefined;
  return row ? toUser(row) : undefined;
}

/** USER_NOT_FOUND on the request field `field`. */
export function userNotFound(field: string): DomainError {
  return reasonError(MERCHANT_USER_REASONS, 'USER_NOT_FOUND', `${field} not found`, { [field]: [problem('not_found')] });
}

/** The merchant's own active user, else USER_NOT_FOUND on `field`. */
export async function merchantUser(database: Knex, merchantId: string, userId: string, field: string): Promise<User> {
  const user = await getUser(database, userId);
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
