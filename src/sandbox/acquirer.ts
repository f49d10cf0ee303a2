/**
 * The sandbox card acquirer (test mode, platform decisions §7), one implementation of the acquirer port
 * (src/acquirers): the card authorizer the Visa/Master deposit consults, the OTP check of local-card and
 * bank-account deposits, and the reversals and refunds of deposits (docs/refunds.md "Providers").
 *
 *   authorize "4242424242424242"  approved
 *   authorize "4000000000000002"  declined ("The card was declined.")
 *   authorize "4000000000005126"  approved; its refunds fail ("The refund was declined by the card issuer.")
 *   any other number              approved when it is 12–19 digits and Luhn valid (so any test card of the usual
 *                                 brands works on the hosted page), declined otherwise
 *   verifyOtp                     password === SANDBOX_OTP, compared in constant time
 *   reverse                       releases an authorization that was not captured; a captured one: failed
 *   refund (Visa/Master)          after capture, up to the captured amount in all; before capture, after a
 *                                 reversal or above it: failed
 *   refund (local card)           succeeds (the sandbox keeps no amount for OTP deposits)
 *   refund (bank account)         unsupported
 *
 * Decisions are derived from their inputs (authorization ids from the idempotency key, the refund-failing card
 * marked in its authorization id), so another process's sandbox (a second worker, a restart) decides alike; what it
 * remembers (captures, reversals, amounts refunded, refund keys: the newest SANDBOX_MEMORY of each) only adds the
 * checks above for authorizations it saw. The expiry is checked when the card is vaulted (the card rules of src/instruments/store.ts).
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Acquirer, AcquirerRefundOutcome, AcquirerRefundRequest, AcquirerReversal, CardAuthorization } from '../acquirers';
import type { Config } from '../config';
import { constantTimeEqual } from '../crypto/secrets';
import { normalizeCardNumber } from '../instruments/store';

/** Test card numbers with a fixed answer. */
export const SANDBOX_CARDS = {
  approved: '4242424242424242',
  declined: '4000000000000002',
  /** Approved and captured as any card; every refund of it fails. */
  refundFails: '4000000000005126',
} as const;

export const DECLINED_MESSAGE = 'The card was declined.';
export const REFUND_DECLINED_MESSAGE = 'The refund was declined by the card issuer.';
export const BANK_ACCOUNT_REFUND_MESSAGE = 'Bank-account deposits cannot be refunded at the acquirer yet.';

export interface Authorization {
  approved: boolean;
  /** "OK" or the decline message shown to the payer. */
  message: string;
}

/** The sandbox acquirer's decision on a card number (full number, from the vault; never logged). */
export function authorizeCard(number: string): Authorization {
  const digits = normalizeCardNumber(number);
  if (!digits || digits === SANDBOX_CARDS.declined) return { approved: false, message: DECLINED_MESSAGE };
  return { approved: true, message: 'OK' };
}

/** True when `password` is the sandbox OTP (constant-time comparison); false when no OTP is configured (live mode). */
export function verifyOtp(config: Pick<Config, 'SANDBOX_OTP'>, password: string): boolean {
  return typeof password === 'string' && config.SANDBOX_OTP !== undefined && constantTimeEqual(password, config.SANDBOX_OTP);
}

/** A refund the sandbox made (the payer's money sent back), for tests and the demo. */
export interface SandboxRefundRecord {
  refund_id: string;
  idempotency_key: string;
  instrument: AcquirerRefundRequest['instrument'];
  /** The authorization id (Visa/Master) or the deposit reference (local card). */
  target: string;
  amount_units: bigint;
  currency: string;
}

/** What the sandbox was asked to do with approved authorizations and refunds (the newest 1,000 of each). */
export interface SandboxSettlements {
  settlements: Array<{ authorization_id: string; action: 'capture' | 'reverse' }>;
  refunds: SandboxRefundRecord[];
}

const SETTLEMENTS_KEPT = 1000;
/** Authorizations and refund keys each sandbox remembers. */
export const SANDBOX_MEMORY = 10_000;

/** `SBX` + 24 hex digits, or `SBXR` + 24 for the refund-failing card. */
const AUTHORIZATION_ID = /^SBX(R?)[0-9A-F]{24}$/;

interface Remembered {
  amount_units: bigint;
  currency: string;
  state: 'authorized' | 'captured' | 'reversed';
  refunded_units: bigint;
}

function digest(text: string, length: number): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length).toUpperCase();
}

/** The sandbox as an acquirer: deterministic decisions, authorization ids derived from the idempotency key. */
export function createSandboxAcquirer(config: Pick<Config, 'SANDBOX_OTP'>): Acquirer & SandboxSettlements {
  const settlements: SandboxSettlements['settlements'] = [];
  const refunds: SandboxRefundRecord[] = [];
  const authorizations = new LRUCache<string, Remembered>({ max: SANDBOX_MEMORY });
  const refundKeys = new LRUCache<string, { fingerprint: string; outcome: AcquirerRefundOutcome }>({ max: SANDBOX_MEMORY });
  const keep = <T>(list: T[], entry: T) => {
    list.push(entry);
    if (list.length > SETTLEMENTS_KEPT) list.shift();
  };
  const failed = (message: string): AcquirerRefundOutcome => ({ status: 'failed', message });

  /** The outcome of a Visa/Master refund not seen before under its key. */
  function refundCard(input: AcquirerRefundRequest & { instrument: 'visa_master' }): AcquirerRefundOutcome {
    const format = AUTHORIZATION_ID.exec(input.authorization_id);
    if (!format) return failed('Unknown authorization.');
    if (format[1] === 'R') return failed(REFUND_DECLINED_MESSAGE);
    const known = authorizations.get(input.authorization_id);
    if (known) {
      if (known.state === 'authorized') return failed('The authorization was not captured: reverse it instead.');
      if (known.state === 'reversed') return failed('The authorization was reversed: nothing was captured.');
      if (known.currency !== input.currency) return failed('The refund is not in the currency captured.');
      if (known.refunded_units + input.amount_units > known.amount_units) return failed('The refunds would exceed the captured amount.');
      known.refunded_units += input.amount_units;
    }
    return { status: 'succeeded', refund_id: `SBXRF${digest(input.idempotency_key, 24)}` };
  }

  return {
    settlements,
    refunds,
    async authorize(input): Promise<CardAuthorization> {
      const decision = authorizeCard(input.card_number);
      const refundFails = normalizeCardNumber(input.card_number) === SANDBOX_CARDS.refundFails;
      const authorization_id = `SBX${refundFails ? 'R' : ''}${digest(input.idempotency_key, 24)}`;
      if (decision.approved && !authorizations.has(authorization_id)) {
        authorizations.set(authorization_id, { amount_units: input.amount_units, currency: input.currency, state: 'authorized', refunded_units: 0n });
      }
      return { ...decision, authorization_id };
    },
    async capture(input) {
      const known = authorizations.get(input.authorization_id);
      if (known?.state === 'authorized') known.state = 'captured';
      keep(settlements, { authorization_id: input.authorization_id, action: 'capture' });
    },
    async reverse(input): Promise<AcquirerReversal> {
      if (!AUTHORIZATION_ID.test(input.authorization_id)) return { status: 'failed', message: 'Unknown authorization.' };
      const known = authorizations.get(input.authorization_id);
      if (known?.state === 'captured') return { status: 'failed', message: 'The authorization was captured: refund it instead.' };
      if (known?.state === 'reversed') return { status: 'reversed' };
      if (known) known.state = 'reversed';
      keep(settlements, { authorization_id: input.authorization_id, action: 'reverse' });
      return { status: 'reversed' };
    },
    async refund(input): Promise<AcquirerRefundOutcome> {
      if (input.instrument === 'bank_account') return { status: 'unsupported', message: BANK_ACCOUNT_REFUND_MESSAGE };
      if (typeof input.amount_units !== 'bigint' || input.amount_units <= 0n || !input.idempotency_key) return failed('The refund amount must be positive.');
      const target = input.instrument === 'visa_master' ? input.authorization_id : input.deposit_reference;
      const fingerprint = JSON.stringify([input.instrument, target, input.amount_units.toString(), input.currency]);
      const seen = refundKeys.get(input.idempotency_key);
      if (seen) return seen.fingerprint === fingerprint ? seen.outcome : failed('The idempotency key was used with other parameters.');
      const outcome: AcquirerRefundOutcome =
        input.instrument === 'visa_master' ? refundCard(input) : { status: 'succeeded', refund_id: `SBXRF${digest(input.idempotency_key, 24)}` };
      refundKeys.set(input.idempotency_key, { fingerprint, outcome });
      if (outcome.status === 'succeeded') {
        keep(refunds, { refund_id: outcome.refund_id, idempotency_key: input.idempotency_key, instrument: input.instrument, target, amount_units: input.amount_units, currency: input.currency });
      }
      return outcome;
    },
    async verifyOtp(input) {
      return verifyOtp(config, input.password);
    },
  };
}
