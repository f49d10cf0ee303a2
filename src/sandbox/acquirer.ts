/**
 * The sandbox card acquirer (test mode, platform decisions §7), one implementation of the acquirer port
 * (src/acquirers): the card authorizer the Visa/Master deposit consults, and the OTP check of local-card and
 * bank-account deposits.
 *
 *   authorize "4242424242424242"  approved
 *   authorize "4000000000000002"  declined ("The card was declined.")
 *   any other number              approved when it is 12–19 digits and Luhn valid (so any test card of the usual
 *                                 brands works on the hosted page), declined otherwise
 *   verifyOtp                     password === SANDBOX_OTP, compared in constant time
 *
 * The expiry is checked when the card is vaulted (src/instruments/cards.ts), not here.
 */
import { createHash } from 'node:crypto';
import type { Acquirer, CardAuthorization } from '../acquirers';
import type { Config } from '../config';
import { constantTimeEqual } from '../crypto/secrets';
import { normalizeCardNumber } from '../instruments/cards';

/** Test card numbers with a fixed answer. */
export const SANDBOX_CARDS = {
  approved: '4242424242424242',
  declined: '4000000000000002',
} as const;

export const DECLINED_MESSAGE = 'The card was declined.';

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

/** What the sandbox was asked to do with approved authorizations (the newest 1,000), for tests and the demo. */
export interface SandboxSettlements {
  settlements: Array<{ authorization_id: string; action: 'capture' | 'reverse' }>;
}

const SETTLEMENTS_KEPT = 1000;

/** The sandbox as an acquirer: deterministic decisions, authorization ids derived from the idempotency key. */
export function createSandboxAcquirer(config: Pick<Config, 'SANDBOX_OTP'>): Acquirer & SandboxSettlements {
  const settlements: SandboxSettlements['settlements'] = [];
  const record = (authorization_id: string, action: 'capture' | 'reverse') => {
    settlements.push({ authorization_id, action });
    if (settlements.length > SETTLEMENTS_KEPT) settlements.shift();
  };
  return {
    settlements,
    async authorize(input): Promise<CardAuthorization> {
      const decision = authorizeCard(input.card_number);
      const authorization_id = `SBX${createHash('sha256').update(input.idempotency_key).digest('hex').slice(0, 24).toUpperCase()}`;
      return { ...decision, authorization_id };
    },
    async capture(input) {
      record(input.authorization_id, 'capture');
    },
    async reverse(input) {
      record(input.authorization_id, 'reverse');
    },
    async verifyOtp(input) {
      return verifyOtp(config, input.password);
    },
  };
}
