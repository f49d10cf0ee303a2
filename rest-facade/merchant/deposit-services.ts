/**
 * The DepositService's part of Area C (docs/area-c.md "Deposits and confirmations"; refund_deposit and
 * refund_deposit_status: docs/refunds.md "Area C"): the /do-action deposit services
 * (each reads its fields, calls one DepositService RPC with the call's ActionAuth and shapes `data`, the
 * Visa/Master confirmation page included), their field rules, and the browser pages of deposits. For a page,
 * DepositService answers a typed page view; it is rendered (rest-facade/views/deposit-pages.ts) with its status, or
 * the payer is redirected with the result to the paid preorder's redirect_url.
 *
 *   GET  /visa-master/confirm/:token     the confirmation page of a Visa/Master deposit again
 *   POST /visa-master/confirm/:token     the confirmation form's submission → 303 to redirect_url?result=… or the
 *                                        result page (hidden input `result`)
 *   GET  /pre-order/:token               the hosted preorder page (seller, description, amount, card form)
 *   POST /pre-order/:token/pay           the card form (application/x-www-form-urlencoded) → the confirmation page
 *
 * Area C's rule forms, messages and answers: ./contract.ts.
 */
import type Router from '@koa/router';
import { id } from '../../src/field-rules';
import type { DepositPage, DepositRefund, StartedDeposit } from '../../src/gen/payments/deposit/v1/deposit_pb';
import { amountJson, type Currency } from '../../src/money';
import { readRpcFailure } from '../../src/rpc/errors';
import type { FacadeContext, FacadeState } from '../context';
import { rpcCallOptions, setRetryAfter } from '../rpc-call';
import { confirmationPage, confirmationView, faultPage, notFoundPage, renderDepositPage, resultRedirect, tooManyRequestsPage } from '../views/deposit-pages';
import { sendHtml } from '../views/html';
import { amount, currency, readAreaC, requestFields, string, type MerchantServiceTable } from './contract';

// ---- Field rules ----

/** Longest accepted text of the deposit fields. */
const MAX_LENGTH = { token: 64, password: 64, encrypted: 4096 } as const;

export interface DepositFields {
  token: string;
  preOrderToken: string;
  amountUnits: bigint;
  currency: Currency;
  /** Empty when not sent. */
  userId: string;
}

/** deposit_by_local_card and deposit_by_bank_account: token, pre_order_token (O), amount, currency, user_id (O). */
const DEPOSIT = {
  currency: currency(),
  token: string({ required: true, max: MAX_LENGTH.token }),
  pre_order_token: string(),
  amount: amount(),
  user_id: id(),
};

function depositFields<V extends { pre_order_token?: string; user_id?: string }>(values: V) {
  const fields = requestFields(values);
  return { ...fields, preOrderToken: fields.preOrderToken ?? '', userId: fields.userId ?? '' };
}

export function readDeposit(body: Record<string, unknown>): DepositFields {
  return depositFields(readAreaC(DEPOSIT, body));
}

/** deposit_by_visa_master: the deposit fields and security_code (encrypted, base64; decrypted by the service). */
const VISA_MASTER_DEPOSIT = { ...DEPOSIT, security_code: string({ required: true, max: MAX_LENGTH.encrypted }) };

export function readVisaMasterDeposit(body: Record<string, unknown>): DepositFields & { securityCode: string } {
  return depositFields(readAreaC(VISA_MASTER_DEPOSIT, body));
}

/** confirm_payments: user_id, token (the deposit token), password (OTP or soft token). */
const CONFIRM_PAYMENTS = {
  user_id: id({ required: true }),
  token: string({ required: true, max: MAX_LENGTH.token }),
  password: string({ required: true, max: MAX_LENGTH.password }),
};

export function readConfirmPayments(body: Record<string, unknown>): { userId: string; token: string; password: string } {
  return requestFields(readAreaC(CONFIRM_PAYMENTS, body));
}

/**
 * refund_deposit (a platform extension, docs/refunds.md "Area C"): reference (the deposit's DEP…), amount (O, default
 * everything still refundable), reason (O, at most 255).
 */
const REFUND_DEPOSIT = {
  reference: string({ required: true, max: MAX_LENGTH.token }),
  amount: amount({ required: false }),
  reason: string({ max: 255 }),
};

export function readRefundDeposit(body: Record<string, unknown>): { reference: string; amountUnits: bigint; reason: string } {
  const fields = requestFields(readAreaC(REFUND_DEPOSIT, body));
  return { reference: fields.reference, amountUnits: fields.amountUnits ?? 0n, reason: fields.reason ?? '' };
}

/** refund_deposit_status: refund_reference (one refund) or reference (the deposit's refunds). */
const REFUND_DEPOSIT_STATUS = {
  refund_reference: string({ max: MAX_LENGTH.token }),
  reference: string({ max: MAX_LENGTH.token }),
};

export function readRefundDepositStatus(body: Record<string, unknown>): { refundReference: string; reference: string } {
  const fields = requestFields(readAreaC(REFUND_DEPOSIT_STATUS, body));
  return { refundReference: fields.refundReference ?? '', reference: fields.reference ?? '' };
}

/** The card form of the hosted preorder page (application/x-www-form-urlencoded fields, all text). */
export interface CardFormFields {
  holderName: string;
  cardNumber: string;
  expiryMonth: string;
  expiryYear: string;
  securityCode: string;
}

/** Reads the hosted page's card form from parsed form fields (missing fields become empty text). */
export function readCardForm(form: URLSearchParams): CardFormFields {
  const text = (name: string) => (form.get(name) ?? '').slice(0, 256);
  return {
    holderName: text('holder_name'),
    cardNumber: text('card_number'),
    expiryMonth: text('expiry_month'),
    expiryYear: text('expiry_year'),
    securityCode: text('security_code'),
  };
}

// ---- Services ----

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

/** `data` of refund_deposit and each refund of refund_deposit_status. */
function depositRefundJson(refund: DepositRefund | undefined): Record<string, unknown> {
  const currency = (refund?.currency ?? 'USD') as Currency;
  return {
    refund_reference: refund?.refundReference ?? '',
    reference: refund?.reference ?? '',
    status: refund?.status ?? '',
    method: refund?.method ?? '',
    amount: amountJson(refund?.amountUnits ?? 0n, currency),
    currency,
    reason: refund?.reason ?? '',
    failure_reason: refund?.failureReason || null,
    created_at: refund?.createdAt ?? '',
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

  async refund_deposit({ body, caller, clients, callOptions, idempotencyKey }) {
    const fields = readRefundDeposit(body);
    const answer = await clients.deposit.refundDeposit({ ...caller, ...fields, idempotencyKey }, callOptions);
    return depositRefundJson(answer.refund);
  },

  async refund_deposit_status({ body, caller, clients, callOptions }) {
    const fields = readRefundDepositStatus(body);
    const answer = await clients.deposit.listDepositRefunds({ ...caller, ...fields }, callOptions);
    const currency = (answer.currency || 'USD') as Currency;
    return { refunds: answer.refunds.map(depositRefundJson), refundable_amount: amountJson(answer.refundableUnits, currency), currency };
  },
};

// ---- Pages ----

/** A page token as the platform issues them (deposit and preorder tokens); anything else is an unknown page. */
const PAGE_TOKEN = /^[A-Za-z0-9_-]{1,128}$/;

/** Renders a page view of the service (a missing view is a fault). */
function sendPage(ctx: FacadeContext, page: DepositPage | undefined, submission = false): void {
  const rendered = renderDepositPage(page, `${ctx.state.config.PUBLIC_BASE_URL}${ctx.state.config.MERCHANT_PREFIX}`, submission);
  sendHtml(ctx, rendered.status, rendered.html);
}

async function answer(ctx: FacadeContext, render: () => Promise<void>): Promise<void> {
  // The hosted pages' gate: a token that cannot be one is answered like an unknown one, before any RPC.
  if (!PAGE_TOKEN.test(ctx.params.token ?? '')) return sendHtml(ctx, 404, notFoundPage());
  try {
    await render();
  } catch (error) {
    const failure = readRpcFailure(error, 'deposit');
    if (failure.reason === 'RATE_LIMITED') {
      setRetryAfter(ctx, failure.retryAfterSeconds);
      return sendHtml(ctx, 429, tooManyRequestsPage());
    }
    ctx.state.logger.error({ err: error, request_id: ctx.state.requestId }, 'deposit page failed');
    sendHtml(ctx, 500, faultPage());
  }
}

/** Registers the deposit pages on the Area C router. */
export function registerDepositPages(router: Router<FacadeState>): void {
  const options = rpcCallOptions;

  router.get('/visa-master/confirm/:token', (ctx) =>
    answer(ctx, async () => {
      const reply = await ctx.state.clients.deposit.getVisaMasterConfirmation({ depositToken: ctx.params.token ?? '' }, options(ctx));
      sendPage(ctx, reply.page);
    }),
  );

  router.post('/visa-master/confirm/:token', (ctx) =>
    answer(ctx, async () => {
      const reply = await ctx.state.clients.deposit.submitVisaMasterConfirmation({ depositToken: ctx.params.token ?? '' }, options(ctx));
      if (reply.redirectUrl && reply.page?.view.case === 'result') {
        ctx.set('Cache-Control', 'no-store');
        ctx.set('Referrer-Policy', 'no-referrer');
        ctx.status = 303;
        ctx.redirect(resultRedirect(reply.redirectUrl, reply.page.view.value));
        return;
      }
      sendPage(ctx, reply.page);
    }),
  );

  router.get('/pre-order/:token', (ctx) =>
    answer(ctx, async () => {
      const reply = await ctx.state.clients.deposit.getPreOrderPage({ preOrderToken: ctx.params.token ?? '' }, options(ctx));
      sendPage(ctx, reply.page);
    }),
  );

  router.post('/pre-order/:token/pay', (ctx) =>
    answer(ctx, async () => {
      // The raw body was read by the app (rest-facade/app.ts); WHATWG URLSearchParams parses the urlencoded form.
      const form = ctx.is('application/x-www-form-urlencoded') ? new URLSearchParams(ctx.state.rawBody) : new URLSearchParams();
      const reply = await ctx.state.clients.deposit.payPreOrderByCard(
        { preOrderToken: ctx.params.token ?? '', ...readCardForm(form) },
        options(ctx),
      );
      sendPage(ctx, reply.page, true);
    }),
  );
}
