/**
 * The /do-action deposit services of Area C (docs/area-c.md "Deposits and confirmations"): each reads its
 * fields (./fields.ts), calls one DepositService RPC with the call's ActionAuth and shapes `data`.
 */
import { readConfirmPayments, readDeposit, readVisaMasterDeposit } from './deposit-fields';
import type { StartedDeposit } from '../../src/gen/payments/deposit/v1/deposit_pb';
import { confirmationPage, confirmationView } from '../views/deposit-pages';
import type { MerchantServiceTable } from './wallet-services';

/** `data` of every deposit service: reference, token, token_type, need_verify_trx, html_confirm_payment. */
function startedDepositJson(deposit: StartedDeposit | undefined, pageBaseUrl: string): Record<string, unknown> {
  return {
    reference: deposit?.reference ?? '',
    token: deposit?.token ?? '',
    token_type: deposit?.tokenType ?? 0,
    need_verify_trx: deposit?.needVerifyTrx ?? false,
    html_confirm_payment: deposit?.confirmation ? confirmationPage(confirmationView(deposit.confirmation, pageBaseUrl)) : '',
  };
}

export const depositMerchantServices: MerchantServiceTable = {
  async deposit_by_local_card({ body, caller, clients, callOptions, idempotencyKey, pageBaseUrl }) {
    const fields = readDeposit(body);
    const answer = await clients.deposit.depositByLocalCard({ ...caller, ...fields, idempotencyKey }, callOptions);
    return startedDepositJson(answer.deposit, pageBaseUrl);
  },

  async deposit_by_bank_account({ body, caller, clients, callOptions, idempotencyKey, pageBaseUrl }) {
    const fields = readDeposit(body);
    const answer = await clients.deposit.depositByBankAccount({ ...caller, ...fields, idempotencyKey }, callOptions);
    return startedDepositJson(answer.deposit, pageBaseUrl);
  },

  async deposit_by_visa_master({ body, caller, clients, callOptions, idempotencyKey, pageBaseUrl }) {
    const fields = readVisaMasterDeposit(body);
    const answer = await clients.deposit.depositByVisaMaster({ ...caller, ...fields, idempotencyKey }, callOptions);
    return startedDepositJson(answer.deposit, pageBaseUrl);
  },

  async confirm_payments({ body, caller, clients, callOptions, idempotencyKey }) {
    const fields = readConfirmPayments(body);
    await clients.deposit.confirmPayment({ ...caller, ...fields, idempotencyKey }, callOptions);
    return [];
  },
};
