/**
 * The sandbox bank rails (test mode; docs/payouts.md "Bank payouts"): answers at once, by amount. A payout of
 * SANDBOX_BANK_FAILING_UNITS minor units (13.13) is refused by the bank; any other succeeds. The same key answers
 * the first outcome (and never pays twice); the key with other parameters is refused for good.
 */
import { randomBytes } from 'node:crypto';
import type { BankPayoutOutcome, BankPayoutRequest, BankRails } from '../bank-rails';

/** A bank payout of this many minor units is refused by the beneficiary bank. */
export const SANDBOX_BANK_FAILING_UNITS = 1313n;
export const SANDBOX_BANK_FAILURE_MESSAGE = 'The beneficiary bank rejected the transfer.';

export interface SandboxBankRails extends BankRails {
  /** Payouts by key, as the rails recorded them. */
  readonly sent: ReadonlyMap<string, BankPayoutRequest & { outcome: BankPayoutOutcome }>;
}

export function createSandboxBankRails(): SandboxBankRails {
  const sent = new Map<string, BankPayoutRequest & { outcome: BankPayoutOutcome; fingerprint: string }>();
  return {
    sent,
    async payout(input, idempotency_key) {
      const fingerprint = JSON.stringify([input.payout_reference, input.amount_units.toString(), input.currency, input.account_token]);
      const known = sent.get(idempotency_key);
      if (known) return known.fingerprint === fingerprint ? known.outcome : { status: 'failed', message: 'idempotency key reused with other parameters' };
      const outcome: BankPayoutOutcome =
        input.amount_units === SANDBOX_BANK_FAILING_UNITS ? { status: 'failed', message: SANDBOX_BANK_FAILURE_MESSAGE } : { status: 'succeeded', transfer_id: `BNK-${randomBytes(12).toString('hex')}` };
      sent.set(idempotency_key, { ...input, outcome, fingerprint });
      return outcome;
    },
  };
}
