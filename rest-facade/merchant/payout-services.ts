/**
 * The PayoutService's part of Area C (docs/payouts.md "Bank payouts", docs/area-c.md): the /do-action services
 * `payout_to_bank` (a user's wallet to one of its verified tokenized bank accounts; signed and idempotent like every
 * money-moving action) and `payout_status`. Each reads its fields, calls one PayoutService RPC with the call's
 * ActionAuth and shapes `data`. Area C's rule forms, messages and answers: ./contract.ts.
 */
import { id } from '../../src/field-rules';
import type { Payout } from '../../src/gen/payments/payout/v1/payout_pb';
import { amountJson, type Currency } from '../../src/money';
import { amount, currency, readAreaC, requestFields, string, type MerchantServiceTable } from './contract';

/** payout_to_bank: token (the bank account's), user_id, amount, currency. */
const PAYOUT_TO_BANK = {
  currency: currency(),
  token: string({ required: true, max: 64 }),
  amount: amount(),
  user_id: id({ required: true }),
};

/** payout_status: payout_reference. */
const PAYOUT_STATUS = { payout_reference: string({ required: true, max: 64 }) };

/** `data` of payout_to_bank and payout_status. */
function bankPayoutJson(payout: Payout | undefined): Record<string, unknown> {
  const currency = (payout?.currency || 'USD') as Currency;
  return {
    payout_reference: payout?.payoutReference ?? '',
    status: payout?.status ?? '',
    amount: amountJson(payout?.amountUnits ?? 0n, currency),
    fee: amountJson(payout?.feeUnits ?? 0n, currency),
    currency,
    destination: payout?.address ?? '',
    transfer_id: payout?.payoutTrxRef || null,
    failure_reason: payout?.failureReason || null,
    created_at: payout?.createdAt ?? '',
    decided_at: payout?.decidedAt || null,
  };
}

export const payoutMerchantServices: MerchantServiceTable = {
  async payout_to_bank({ body, caller, clients, callOptions, idempotencyKey }) {
    const fields = requestFields(readAreaC(PAYOUT_TO_BANK, body));
    const answer = await clients.payout.payoutToBank(
      { ...caller, userId: fields.userId, token: fields.token, amountUnits: fields.amountUnits, currency: fields.currency, idempotencyKey },
      callOptions,
    );
    return bankPayoutJson(answer.payout);
  },

  async payout_status({ body, caller, clients, callOptions }) {
    const fields = requestFields(readAreaC(PAYOUT_STATUS, body));
    const answer = await clients.payout.getBankPayoutStatus({ ...caller, payoutReference: fields.payoutReference }, callOptions);
    return bankPayoutJson(answer.payout);
  },
};
