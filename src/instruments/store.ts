/**
 * The instrument vault's table (`instruments`, migration 008; platform decisions §7): tokenized local
 * cards, bank accounts and Visa/Master cards. Numbers are stored only AES-256-GCM encrypted under the current data
 * key (`sealNumber`: `sealSecret` of src/crypto/data-keys.ts, the same primitive that protects merchant HMAC
 * secrets), bound to the instrument's token as associated data so a ciphertext copied onto another row does not
 * decrypt, with their last 4 digits; security codes are never stored. Tokens are opaque: `tok_` + 32 base64url
 * characters. Stored form of a number: `v2.<key id>.<iv>.<ciphertext>.<tag>` (base64url parts); `v1.` rows from
 * before key ids are under `k0`.
 *
 * Tenant isolation: every lookup is scoped by merchant (and by user when the caller names one); an instrument of
 * another merchant or user is answered exactly like an unknown token.
 *
 * Shared with deposits: findInstrumentByToken, requireInstrument, revealCardNumber, vaultGuestCard, and the card
 * rules a deposit checks (isExpired, validSecurityCode, normalizeCardNumber).
 *
 * The rules of the numbers the vault keeps, checked before a number is stored or a card is charged (platform
 * decisions §7; docs/area-c.md "Tokenization"): pure functions, no I/O, no logging, below the vault's code.
 *
 *   holder name     2–100 characters after surrounding white space is trimmed, at least 2 of them letters: words
 *                   of letters of any script (with their combining marks, ZWJ/ZWNJ), separated by spaces (also
 *                   no-break and ideographic) or one name punctuation mark (' ’ - ‐ . , · ・ ׳ ״, or & of joint
 *                   holders) with optional spaces around it, which may follow a period; a trailing period ("Jr.").
 *                   No digits, other symbols or control characters.
 *   card number     12–19 digits (spaces and hyphens between digits are dropped first), Luhn valid
 *   brand           from the leading digits: visa, mastercard, unionpay, amex, jcb, discover, other
 *   expiry          month 1–12, year of 2 (20yy) or 4 digits; valid through the end of that month, UTC
 *   security code   3 or 4 digits (checked, never stored)
 *   account number  6–20 digits (spaces and hyphens dropped first)
 *
 * The rules of encrypted fields are strict on purpose (docs/security.md "Encrypted fields are no padding oracle"):
 * a random plaintext, such as the synthetic message of a ciphertext whose padding is not conformant or the garbage
 * inside a conformant one, must essentially never pass, so that accepting a field says nothing about its padding.
 */
import type { Knex } from 'knex';
import { openSecret, sealSecret, type DataKeyring } from '../crypto/data-keys';
import { randomToken } from '../crypto/secrets';
import { invalidFields, reasonError, type FieldViolations } from '../errors';
import { INSTRUMENT_REASONS } from './reasons';
import type { PlatformDeps } from '../platform-deps';
import { problem } from '../field-problems';

/** The associated data of an instrument's number (rotation re-seals with it). */
export function numberContext(token: string): string {
  return `instrument:${token}:number`;
}

/** Encrypts a card or account number for the row of `token`. */
function sealNumber(dataKeys: DataKeyring, token: string, number: string): string {
  return sealSecret(dataKeys, number, numberContext(token));
}

/**
 * Decrypts what `sealNumber` stored for `token`.
 * @throws Error "cannot decrypt secret…" when the key, token or ciphertext does not match; UnknownDataKeyError
 */
function openNumber(dataKeys: DataKeyring, token: string, sealed: string): string {
  return openSecret(dataKeys, sealed, numberContext(token));
}

export type InstrumentKind = 'local_card' | 'bank_account' | 'visa_master';
export type InstrumentStatus = 'active' | 'pending_activation';

export interface Instrument {
  /** Decimal of the bigserial id. */
  id: string;
  token: string;
  merchantId: string;
  /** Decimal user id (users.id); null for a guest card vaulted by the hosted preorder page. */
  userId: string | null;
  kind: InstrumentKind;
  holderName: string;
  last4: string;
  /** Cards only (visa, mastercard, unionpay, amex, jcb, discover, other). */
  brand: string | null;
  /** Visa/Master cards only. */
  expiryMonth: number | null;
  /** Four digits; Visa/Master cards only. */
  expiryYear: number | null;
  /** Local cards and bank accounts. */
  bankId: number | null;
  status: InstrumentStatus;
}


/** Longest holder name kept, in characters (Unicode code points). */
export const HOLDER_NAME_MAX = 100;
/** Fewest letters (and characters) a holder name has. */
const HOLDER_NAME_MIN_LETTERS = 2;

/** A word of a name: a letter, then letters, combining marks and the joiners some scripts write names with. */
const NAME_WORD = String.raw`\p{L}[\p{L}\p{M}\u200C\u200D]*`;
/**
 * Between words: spaces (also no-break and ideographic), or one name punctuation mark (or `&`, of joint holders) with
 * optional spaces around it, which may follow a period ("J.-P. Sartre", "Mr. & Mrs. Smith", "King Jr., Martin").
 */
const NAME_SPACES = String.raw`[ \u00A0\u3000]*`;
const NAME_MARK = String.raw`[-\u2010'\u2019.,&\u00B7\u30FB\u05F3\u05F4]`;
const NAME_SEPARATOR = String.raw`(?:[ \u00A0\u3000]+|${NAME_SPACES}(?:\.${NAME_SPACES})?${NAME_MARK}${NAME_SPACES})`;
const HOLDER_NAME = new RegExp(`^${NAME_WORD}(?:${NAME_SEPARATOR}${NAME_WORD})*\\.?$`, 'u');
const LETTER = /\p{L}/gu;

const TOKEN_PATTERN = /^tok_[A-Za-z0-9_-]{32}$/;

/** A fresh instrument token: `tok_` + 24 random bytes as base64url (32 characters). */
export function newInstrumentToken(): string {
  return `tok_${randomToken(24)}`;
}

interface InstrumentRow {
  id: bigint;
  token: string;
  merchant_id: string;
  user_id: bigint | null;
  kind: InstrumentKind;
  holder_name: string;
  number_encrypted: string;
  last4: string;
  brand: string | null;
  expiry_month: number | null;
  expiry_year: number | null;
  bank_id: bigint | null;
  status: InstrumentStatus;
  activation_code_sha256: string | null;
  call_back_url: string | null;
  activated_at: Date | null;
}

function toInstrument(row: InstrumentRow): Instrument {
  return {
    id: String(row.id),
    token: row.token,
    merchantId: row.merchant_id,
    userId: row.user_id === null ? null : String(row.user_id),
    kind: row.kind,
    holderName: row.holder_name,
    last4: row.last4,
    brand: row.brand,
    expiryMonth: row.expiry_month,
    expiryYear: row.expiry_year,
    bankId: row.bank_id === null ? null : Number(row.bank_id),
    status: row.status,
  };
}

/**
 * The merchant's instrument with this token, else undefined (unknown, malformed, or another merchant's).
 */
export async function findInstrumentByToken(
  db: Knex | Knex.Transaction,
  merchantId: string,
  token: string,
): Promise<Instrument | undefined> {
  if (typeof token !== 'string' || !TOKEN_PATTERN.test(token)) return undefined;
  const row = (await db('instruments').where({ token, merchant_id: merchantId }).first()) as InstrumentRow | undefined;
  return row ? toInstrument(row) : undefined;
}

/**
 * The instrument a request names, checked for use: same merchant, same user when `userId` is given, one of
 * `kinds` when given, and active (a bank account still pending activation is refused).
 * @throws DomainError not_found INSTRUMENT_NOT_FOUND on `field` (default `token`) "The selected token is invalid.";
 *         failed_precondition INSTRUMENT_NOT_ACTIVATED "The bank account is not activated yet."
 */
export async function requireInstrument(
  db: Knex | Knex.Transaction,
  input: { merchantId: string; token: string; userId?: string; kinds?: InstrumentKind[]; field?: string },
): Promise<Instrument> {
  const field = input.field ?? 'token';
  const instrument = await findInstrumentByToken(db, input.merchantId, input.token);
  if (
    !instrument ||
    (input.userId !== undefined && instrument.userId !== input.userId) ||
    (input.kinds && !input.kinds.includes(instrument.kind))
  ) {
    throw reasonError(INSTRUMENT_REASONS, 'INSTRUMENT_NOT_FOUND', 'instrument not found', { [field]: [problem('not_found')] });
  }
  if (instrument.status !== 'active') {
    throw reasonError(INSTRUMENT_REASONS, 'INSTRUMENT_NOT_ACTIVATED', 'bank account not activated', {
      [field]: [problem('not_activated')],
    });
  }
  return instrument;
}

/**
 * The full card (or account) number of an instrument, decrypted from the vault. For the sandbox acquirer only;
 * never log or return it.
 * @throws Error when the row is gone or the vault cannot decrypt it (a programming or key error).
 */
export async function revealCardNumber(deps: Pick<PlatformDeps, 'database' | 'keys'>, instrument: Instrument): Promise<string> {
  const row = (await deps.database('instruments').where({ id: instrument.id }).select('token', 'number_encrypted').first()) as
    | Pick<InstrumentRow, 'token' | 'number_encrypted'>
    | undefined;
  if (!row) throw new Error(`instrument ${instrument.id} not found`);
  return openNumber(deps.keys.dataKeys, row.token, row.number_encrypted);
}

export interface NewInstrument {
  merchantId: string;
  userId: string | null;
  kind: InstrumentKind;
  holderName: string;
  /** Normalized digits; stored encrypted, with last 4. */
  number: string;
  brand?: string | null;
  expiry?: Expiry | null;
  bankId?: string | null;
  status?: InstrumentStatus;
  activationCodeSha256?: string | null;
  callBackUrl?: string | null;
  /** Preset token (bank accounts derive their activation code from it); default a fresh one. */
  token?: string;
}

/** Inserts a vaulted instrument (the number encrypted under the data key). @returns the stored instrument. */
export async function insertInstrument(
  deps: Pick<PlatformDeps, 'database' | 'keys'>,
  input: NewInstrument,
  db: Knex | Knex.Transaction = deps.database,
): Promise<Instrument> {
  const token = input.token ?? newInstrumentToken();
  const [row] = (await db('instruments')
    .insert({
      token,
      merchant_id: input.merchantId,
      user_id: input.userId,
      kind: input.kind,
      holder_name: input.holderName,
      number_encrypted: sealNumber(deps.keys.dataKeys, token, input.number),
      last4: lastFour(input.number),
      brand: input.brand ?? null,
      expiry_month: input.expiry?.month ?? null,
      expiry_year: input.expiry?.year ?? null,
      bank_id: input.bankId ?? null,
      status: input.status ?? 'active',
      activation_code_sha256: input.activationCodeSha256 ?? null,
      call_back_url: input.callBackUrl ?? null,
    })
    .returning('*')) as InstrumentRow[];
  return toInstrument(row!);
}

/**
 * The holder name as kept (surrounding white space trimmed) when `text` is one by the holder name rule (header
 * above), else undefined. The rule of the encrypted `holder_name`.
 */
export function holderNameOf(text: string): string | undefined {
  const name = text.trim();
  const characters = [...name].length;
  if (characters < HOLDER_NAME_MIN_LETTERS || characters > HOLDER_NAME_MAX || !HOLDER_NAME.test(name)) return undefined;
  return (name.match(LETTER)?.length ?? 0) >= HOLDER_NAME_MIN_LETTERS ? name : undefined;
}

/**
 * A holder name typed in clear (the hosted card form) as kept: trimmed, checked by the holder name rule. Adds
 * violations under `field` otherwise: `required` (blank), `max_length` (over HOLDER_NAME_MAX characters), `invalid`.
 */
export function checkHolderName(value: string, problems: FieldViolations, field = 'holder_name'): string {
  const name = value.trim();
  if (!name) (problems[field] ??= []).push(problem('required'));
  else if ([...name].length > HOLDER_NAME_MAX) (problems[field] ??= []).push(problem('max_length', HOLDER_NAME_MAX));
  else if (!holderNameOf(name)) (problems[field] ??= []).push(problem('invalid'));
  return name;
}

/**
 * Vaults a Visa/Master card typed on the hosted preorder page as a guest instrument (no user) of `merchantId`.
 * @throws DomainError invalid_argument VALIDATION_FAILED listing `holder_name` (empty, too long, not a name), `number`
 *         (card_number), `expiry` (card_expiry, card_expired).
 */
export async function vaultGuestCard(
  deps: Pick<PlatformDeps, 'database' | 'keys'>,
  input: { merchantId: string; holderName: string; number: string; expiryMonth: number; expiryYear: number },
): Promise<Instrument> {
  const problems: FieldViolations = {};
  const holderName = checkHolderName(input.holderName, problems);
  const number = normalizeCardNumber(input.number);
  if (!number) problems.number = [problem('card_number')];
  const year = input.expiryYear < 100 ? 2000 + input.expiryYear : input.expiryYear;
  const validExpiry =
    Number.isInteger(input.expiryMonth) && input.expiryMonth >= 1 && input.expiryMonth <= 12 && Number.isInteger(year) && year >= 2000 && year <= 9999;
  const expiry: Expiry = { month: input.expiryMonth, year };
  if (!validExpiry) problems.expiry = [problem('card_expiry')];
  else if (isExpired(expiry)) problems.expiry = [problem('card_expired')];
  if (Object.keys(problems).length > 0) throw invalidFields(problems);
  return insertInstrument(deps, {
    merchantId: input.merchantId,
    userId: null,
    kind: 'visa_master',
    holderName,
    number: number!,
    brand: cardBrand(number!),
    expiry,
  });
}

/** Internal lookups of the activation flow (activation.ts). */
export async function findByActivationCodeHash(db: Knex | Knex.Transaction, codeSha256: string): Promise<(Instrument & { callBackUrl: string | null }) | undefined> {
  const row = (await db('instruments').where({ activation_code_sha256: codeSha256, kind: 'bank_account' }).first()) as InstrumentRow | undefined;
  return row ? { ...toInstrument(row), callBackUrl: row.call_back_url } : undefined;
}

/** A bank account by token regardless of merchant (the public QR image URL carries only the token). */
export async function findBankAccountByToken(db: Knex | Knex.Transaction, token: string): Promise<Instrument | undefined> {
  if (typeof token !== 'string' || !TOKEN_PATTERN.test(token)) return undefined;
  const row = (await db('instruments').where({ token, kind: 'bank_account' }).first()) as InstrumentRow | undefined;
  return row ? toInstrument(row) : undefined;
}

/** Marks a pending bank account active. @returns true when this call activated it (false: already active). */
export async function markActivated(db: Knex | Knex.Transaction, instrumentId: string): Promise<boolean> {
  const updated = await db('instruments')
    .where({ id: instrumentId, status: 'pending_activation' })
    .update({ status: 'active', activated_at: db.fn.now(), updated_at: db.fn.now() });
  return updated === 1;
}

// The card and account number rules (pure).

export type CardBrand = 'visa' | 'mastercard' | 'unionpay' | 'amex' | 'jcb' | 'discover' | 'other';

/** The digits of a number written with optional spaces or dashes between digit groups (never a sign). */
function digitsOf(text: string): string | undefined {
  if (!/^\d(?:[\d -]*\d)?$/.test(text)) return undefined;
  return text.replace(/[ -]/g, '');
}

/** Luhn (mod 10) check of a digit string. */
export function luhnValid(digits: string): boolean {
  if (!/^\d+$/.test(digits)) return false;
  let sum = 0;
  for (let index = 0; index < digits.length; index += 1) {
    let digit = digits.charCodeAt(digits.length - 1 - index) - 48;
    if (index % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

/** The normalized card number (12–19 digits, Luhn valid), else undefined. */
export function normalizeCardNumber(text: string): string | undefined {
  const digits = digitsOf(text);
  if (!digits || digits.length < 12 || digits.length > 19 || !luhnValid(digits)) return undefined;
  return digits;
}

/** The normalized bank account number (6–20 digits), else undefined. */
export function normalizeAccountNumber(text: string): string | undefined {
  const digits = digitsOf(text);
  return digits && digits.length >= 6 && digits.length <= 20 ? digits : undefined;
}

function prefixIn(digits: string, length: number, low: number, high: number): boolean {
  const prefix = Number(digits.slice(0, length));
  return digits.length >= length && prefix >= low && prefix <= high;
}

/** The card brand from the number's leading digits (IIN ranges). */
export function cardBrand(digits: string): CardBrand {
  if (digits.startsWith('4')) return 'visa';
  if (prefixIn(digits, 2, 51, 55) || prefixIn(digits, 4, 2221, 2720)) return 'mastercard';
  if (prefixIn(digits, 2, 34, 34) || prefixIn(digits, 2, 37, 37)) return 'amex';
  if (prefixIn(digits, 4, 3528, 3589)) return 'jcb';
  if (digits.startsWith('62') || digits.startsWith('81')) return 'unionpay';
  if (digits.startsWith('6011') || prefixIn(digits, 3, 644, 649) || digits.startsWith('65')) return 'discover';
  return 'other';
}

/** Last 4 digits (what is shown and logged). */
export function lastFour(digits: string): string {
  return digits.slice(-4);
}

export interface Expiry {
  month: number;
  /** Four digits. */
  year: number;
}

function integerOf(value: unknown, pattern: RegExp): number | undefined {
  const text = typeof value === 'number' && Number.isInteger(value) ? String(value) : typeof value === 'string' ? value.trim() : undefined;
  return text !== undefined && pattern.test(text) ? Number(text) : undefined;
}

/**
 * Reads an expiry from month and year given as strings or integers ("12", "30" or "2030").
 * @returns undefined when the month is not 1–12 or the year is not 2 or 4 digits.
 */
export function parseExpiry(month: unknown, year: unknown): Expiry | undefined {
  const monthNumber = integerOf(month, /^\d{1,2}$/);
  const yearNumber = integerOf(year, /^(\d{2}|\d{4})$/);
  if (monthNumber === undefined || yearNumber === undefined || monthNumber < 1 || monthNumber > 12) return undefined;
  return { month: monthNumber, year: yearNumber < 100 ? 2000 + yearNumber : yearNumber };
}

/** True when `now` is past the end of the expiry month (UTC). */
export function isExpired(expiry: Expiry, now: Date = new Date()): boolean {
  return now.getTime() >= Date.UTC(expiry.year, expiry.month, 1); // Date.UTC month is 0-based: this is the next month's first day
}

/** A security code (CVV/CVC): 3 or 4 digits. */
export function validSecurityCode(value: unknown): boolean {
  return typeof value === 'string' ? /^\d{3,4}$/.test(value) : false;
}
