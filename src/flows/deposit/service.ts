/**
 * DepositService (Area C deposits; docs/area-c.md "Deposits and confirmations"; platform decisions §7): the
 * merchant's calls, deposit_by_local_card, deposit_by_bank_account, deposit_by_visa_master (a deposit and its
 * workflow: ./start.ts) and confirm_payments (./confirm.ts), and the payer's pages, the Visa/Master confirmation form and the
 * hosted preorder page (./pages.ts); the SQL is in ./store.ts. Merchant calls are verified with `requireMerchant` like
 * WalletService, and every money-moving call answers a repeat with its first answer (src/idempotency).
 *
 * confirm_payments: ./confirm.ts. refund_deposit and refund_deposit_status (RefundDeposit, ListDepositRefunds; a
 * platform extension, docs/refunds.md "Area C"): ./refund.ts, carried out by workflows/deposit-refund.ts; the
 * operators' views of them (OperatorListDepositRefunds, OperatorShowDepositRefund, admin scope) are here.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import {
  ConfirmPaymentResponseSchema,
  DepositByBankAccountResponseSchema,
  DepositByLocalCardResponseSchema,
  DepositByVisaMasterResponseSchema,
  RefundDepositResponseSchema,
  type DepositRefundSchema,
  type DepositService,
} from '../../gen/payments/deposit/v1/deposit_pb';
import { reasonError } from '../../errors';
import { journaled, type RequestOrigin } from '../../events';
import { answerIdempotently, movementRequest } from '../../idempotency';
import type { PlatformDeps } from '../../platform-deps';
import { clientAddressOf } from '../../rpc/client-address';
import { confirmPayment } from './confirm';
import { payPreOrderByCard, preorderPage, submitVisaMasterConfirmation, visaMasterConfirmationPage } from './pages';
import { startDeposit, startRequest, type StartInput } from './start';
import { depositRefunds, refundDeposit } from './refund';
import { DEPOSIT_REASONS } from './contract';
import { findDepositRefund, listDepositRefunds, type DepositRefundRow } from './refund-store';

/** Most deposit refunds one operator answer lists, and how many without a limit. */
const OPERATOR_LIST_MAX = 500;
const OPERATOR_LIST_DEFAULT = 100;

/** A deposit refund as the RPC answers it; the merchant, decision time, commission and acquirer id only to operators. */
function refundMessage(refund: DepositRefundRow, operator = false): MessageInitShape<typeof DepositRefundSchema> {
  const operatorFields = operator
    ? {
        merchantId: refund.merchant_id,
        decidedAt: refund.decided_at ? new Date(refund.decided_at).toISOString() : '',
        commissionUnits: refund.commission_units,
        acquirerRefundId: refund.acquirer_refund_id ?? '',
      }
    : {};
  return {
    ...operatorFields,
    refundReference: refund.refund_reference,
    reference: refund.deposit_reference,
    status: refund.status,
    method: refund.method,
    amountUnits: refund.amount_units,
    currency: refund.currency,
    reason: refund.reason,
    failureReason: refund.failure_reason ?? '',
    createdAt: new Date(refund.created_at).toISOString(),
  };
}

/** The request journal's origin of a merchant's deposit call (src/events/requests.ts). */
function origin(action: string, merchantId: string, idempotencyKey: string, context: HandlerContext): RequestOrigin & { reference?: string } {
  return { owner_kind: 'merchant', owner_id: merchantId, action, idempotency_key: idempotencyKey, client_address: clientAddressOf(context) };
}

export function createDepositService(deps: PlatformDeps): ServiceImpl<typeof DepositService> {
  // The merchant each request acts for is the one its ActionAuth proves (src/merchant-auth), never an asserted id.
  const { requireMerchant } = deps.merchantAuth;

  return {
    async depositByLocalCard(request, context) {
      const act = await requireMerchant(request, context);
      const input: StartInput = { ...request, merchantId: act.merchantId, kind: 'local_card', instrumentToken: request.token };
      return journaled(
        deps,
        origin('area-c.deposit_by_local_card', act.merchantId, request.idempotencyKey, context),
        () => answerIdempotently(deps.idempotency, startRequest(input, act, request.idempotencyKey), DepositByLocalCardResponseSchema, () => startDeposit(deps, input)),
        (answer) => answer.deposit?.reference,
      );
    },

    async depositByBankAccount(request, context) {
      const act = await requireMerchant(request, context);
      const input: StartInput = { ...request, merchantId: act.merchantId, kind: 'bank_account', instrumentToken: request.token };
      return journaled(
        deps,
        origin('area-c.deposit_by_bank_account', act.merchantId, request.idempotencyKey, context),
        () => answerIdempotently(deps.idempotency, startRequest(input, act, request.idempotencyKey), DepositByBankAccountResponseSchema, () => startDeposit(deps, input)),
        (answer) => answer.deposit?.reference,
      );
    },

    async depositByVisaMaster(request, context) {
      const act = await requireMerchant(request, context);
      const input: StartInput = { ...request, merchantId: act.merchantId, kind: 'visa_master', instrumentToken: request.token };
      return journaled(
        deps,
        origin('area-c.deposit_by_visa_master', act.merchantId, request.idempotencyKey, context),
        () => answerIdempotently(deps.idempotency, startRequest(input, act, request.idempotencyKey), DepositByVisaMasterResponseSchema, () => startDeposit(deps, input)),
        (answer) => answer.deposit?.reference,
      );
    },

    /** A repeat of the same signed body answers its first answer (the OTP is then not tried again). */
    async confirmPayment(request, context) {
      const act = await requireMerchant(request, context);
      // The deposit's reference is known once confirmPayment found it (a replayed answer is not journaled again).
      return journaled(deps, origin('area-c.confirm_payments', act.merchantId, request.idempotencyKey, context), (journal) =>
        answerIdempotently(
          deps.idempotency,
          // The deposit token is stored only as its hash, so this fingerprint tells nothing of the OTP it holds.
          movementRequest(act, request.idempotencyKey, 'area-c.confirm_payments', [request.userId, request.token, request.password]),
          ConfirmPaymentResponseSchema,
          () => confirmPayment(deps, act.merchantId, request, context, journal),
        ),
      );
    },

    /**
     * refund_deposit (docs/refunds.md "Area C"): the same signed body, or the same Idempotency-Key with the same
     * fields, answers the first refund; the key with other fields IDEMPOTENCY_KEY_REUSED.
     */
    async refundDeposit(request, context) {
      const act = await requireMerchant(request, context);
      const fields = { reference: request.reference, amountUnits: request.amountUnits, reason: request.reason };
      return journaled(
        deps,
        origin('area-c.refund_deposit', act.merchantId, request.idempotencyKey, context),
        () =>
          answerIdempotently(
            deps.idempotency,
            movementRequest(act, request.idempotencyKey, 'area-c.refund_deposit', [fields.reference, fields.amountUnits, fields.reason]),
            RefundDepositResponseSchema,
            async (ownKey) => ({ refund: refundMessage(await refundDeposit(deps, act.merchantId, fields, ownKey)) }),
          ),
        (answer) => answer.refund?.reference,
      );
    },

    async listDepositRefunds(request, context) {
      const act = await requireMerchant(request, context);
      const found = await depositRefunds(deps, act.merchantId, { refund_reference: request.refundReference, reference: request.reference });
      return { refunds: found.refunds.map((row) => refundMessage(row)), refundableUnits: found.refundable_units, currency: found.currency };
    },

    /** Operators (admin scope, src/rpc/auth.ts): every merchant's deposit refunds, newest first. */
    async operatorListDepositRefunds(request) {
      const rows = await listDepositRefunds(deps.database, { merchant_id: request.merchantId || undefined, limit: Math.min(request.limit || OPERATOR_LIST_DEFAULT, OPERATOR_LIST_MAX) });
      return { refunds: rows.map((row) => refundMessage(row, true)) };
    },

    /** Operators: any deposit refund. @throws DEPOSIT_REFUND_NOT_FOUND */
    async operatorShowDepositRefund(request) {
      const row = await findDepositRefund(deps.database, request.refundReference);
      if (!row) throw reasonError(DEPOSIT_REASONS, 'DEPOSIT_REFUND_NOT_FOUND', 'no deposit refund with this reference');
      return { refund: refundMessage(row, true) };
    },

    getVisaMasterConfirmation: (request) => visaMasterConfirmationPage(deps, request.depositToken),
    submitVisaMasterConfirmation: (request, context) => submitVisaMasterConfirmation(deps, request.depositToken, context),
    getPreOrderPage: (request) => preorderPage(deps, request.preOrderToken),
    payPreOrderByCard: (request, context) => payPreOrderByCard(deps, request, context),
  };
}
