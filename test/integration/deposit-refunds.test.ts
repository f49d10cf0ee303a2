/**
 * refund_deposit and refund_deposit_status (docs/refunds.md "Area C"), end to end through the façade: real
 * PostgreSQL, Temporal, RPC, the DepositWorkflow and the DepositRefundWorkflow, the sandbox acquirer in process.
 * DEPOSIT_CAPTURE_DELAY_SECONDS opens a capture window: a refund within it reverses the authorization (whole only),
 * and the capture never happens; after the capture the acquirer refunds, partly or whole, never above the deposit.
 * `stop()` checks the ledger's invariants; each test checks the balances it moved.
 */
import { runAdminCli } from '../support/admin-cli';
import { Code, ConnectError } from '@connectrpc/connect';
import type { Acquirer } from '../../src/acquirers';
import { createDepositActivities } from '../../src/flows/deposit/activities';
import { createReconciliationRepairs } from '../../src/activities';
import { refundDeposit } from '../../src/flows/deposit/refund';
import { reconcile } from '../../src/flows/reconciliation/activities';
import type { PlatformDeps } from '../../src/platform-deps';
import { createPlatformClients } from '../../src/rpc/clients';
import { createServiceCredential } from '../../src/service-credentials';
import { REFUND_DECLINED_MESSAGE, SANDBOX_CARDS, type SandboxSettlements } from '../../src/sandbox/acquirer';
import { REFUND_MESSAGES } from '../../rest-facade/merchant/contract';
import {
  activateBankAccount,
  encryptedSecurityCode,
  formAction,
  loggedInMerchant,
  newPreorder,
  newUser,
  platformBalance,
  tokenizeBankAccount,
  tokenizeLocalCard,
  tokenizeVisaMaster,
  userBalance,
} from '../support/deposit-setup';
import type { MerchantClient } from '../support/merchant-client';
import { startTestPlatform, type TestPlatform } from '../support/platform';

const CAPTURE_DELAY_SECONDS = 4;
const OTP = '123456';
const BAD_REQUEST = { success: false, code: 400, message: 'Bad Request' };

let platform: TestPlatform;
let merchant: MerchantClient;
let other: MerchantClient;
let payer: { id: number };
let seller: { id: number; wallet_ref: string };

beforeAll(async () => {
  platform = await startTestPlatform({ env: { DEPOSIT_CAPTURE_DELAY_SECONDS: String(CAPTURE_DELAY_SECONDS) }, inProcess: true });
  merchant = await loggedInMerchant(platform, 'Refund Mart');
  other = await loggedInMerchant(platform, 'Other Mart');
  payer = await newUser(merchant, 'Payer');
  seller = await newUser(merchant, 'Seller');
});
afterAll(() => platform.stop());

const acquirer = () => platform.deps.acquirer as Acquirer & SandboxSettlements;
const db = () => platform.deps.database;

async function until<T>(what: string, read: () => Promise<T | undefined>, seconds = 30): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const captured = (authorization_id: string) => acquirer().settlements.some((entry) => entry.authorization_id === authorization_id && entry.action === 'capture');

/** A completed Visa/Master deposit of `amount` USD on `number` (not captured yet): its reference and authorization. */
async function cardDeposit(number: string, amount: number | string, extra: Record<string, unknown> = {}): Promise<{ reference: string; authorization_id: string }> {
  const token = await tokenizeVisaMaster(platform, merchant, payer.id, number);
  const started = await merchant.action('deposit_by_visa_master', { token, amount, currency: 'USD', security_code: encryptedSecurityCode(platform), ...extra });
  expect(started.status).toBe(200);
  const action = formAction(started.body.data.html_confirm_payment)!;
  const url = action.replace(`${platform.config.PUBLIC_BASE_URL}${platform.config.MERCHANT_PREFIX}`, platform.facadeUrl);
  await (await fetch(url, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' })).arrayBuffer();
  const reference = started.body.data.reference as string;
  await until('the deposit to complete', async () => ((await db()('deposits').where({ reference }).first('state'))?.state === 'completed' ? true : undefined));
  const confirmation = await db()('deposit_confirmations').where({ deposit_reference: reference, outcome: 'approved' }).first('authorization_id');
  return { reference, authorization_id: confirmation.authorization_id as string };
}

/** A card deposit once its capture (after the delay) happened. */
async function capturedCardDeposit(number: string, amount: number | string, extra: Record<string, unknown> = {}) {
  const deposit = await cardDeposit(number, amount, extra);
  await until('the capture', async () => ((await db()('deposits').where({ reference: deposit.reference }).first('capture_state'))?.capture_state === 'captured' ? true : undefined));
  expect(captured(deposit.authorization_id)).toBe(true);
  return deposit;
}

/** A completed OTP deposit (local card or activated bank account). */
async function otpDeposit(kind: 'local_card' | 'bank_account', token: string, amount: number): Promise<string> {
  const started = await merchant.action(`deposit_by_${kind}`, { token, amount, currency: 'USD', user_id: payer.id });
  expect(started.status).toBe(200);
  const confirmed = await merchant.action('confirm_payments', { user_id: payer.id, token: started.body.data.token, password: OTP });
  expect(confirmed.status).toBe(200);
  return started.body.data.reference as string;
}

/** The refund's row once its workflow decided it. */
async function decided(refund_reference: string) {
  return until(`refund ${refund_reference} decided`, async () => {
    const row = await db()('deposit_refunds').where({ refund_reference }).first();
    return row && row.status !== 'held' ? row : undefined;
  });
}

async function heldUnits(userId: number): Promise<bigint> {
  const user = await db()('users').where({ id: userId }).first('wallet_account_id');
  const account = await platform.deps.ledger.getAccount(user.wallet_account_id);
  return account.posted_units - account.available_units;
}

async function refundCount(reference: string): Promise<number> {
  return Number(((await db()('deposit_refunds').where({ deposit_reference: reference }).count({ n: '*' }).first()) as { n: string }).n);
}

describe('refund_deposit', () => {
  it('reverses a card deposit refunded within its capture window: whole only, the capture never happens, the wallet debited back', async () => {
    const walletBefore = await userBalance(platform, payer.id);
    const { reference, authorization_id } = await cardDeposit(SANDBOX_CARDS.approved, 7.25);
    expect(await userBalance(platform, payer.id)).toBe(walletBefore + 725n);
    expect((await db()('deposits').where({ reference }).first('capture_state')).capture_state).toBe('authorized');

    const partial = await merchant.action('refund_deposit', { reference, amount: 1 });
    expect(partial.body).toEqual({ ...BAD_REQUEST, error: { amount: [REFUND_MESSAGES.partialBeforeCapture] } });
    expect(await refundCount(reference)).toBe(0);

    const refund = await merchant.action('refund_deposit', { reference, reason: 'order cancelled' });
    expect(refund.status).toBe(200);
    expect(refund.body.data).toEqual({
      refund_reference: expect.stringMatching(/^DRF[A-Z0-9]{18}$/),
      reference,
      status: 'held',
      method: 'reversal',
      amount: 7.25,
      currency: 'USD',
      reason: 'order cancelled',
      failure_reason: null,
      created_at: expect.any(String),
    });
    const row = await decided(refund.body.data.refund_reference);
    expect(row).toMatchObject({ status: 'succeeded', method: 'reversal' });
    expect(acquirer().settlements.filter((entry) => entry.authorization_id === authorization_id)).toEqual([{ authorization_id, action: 'reverse' }]);
    expect(await userBalance(platform, payer.id)).toBe(walletBefore);

    // The workflow's capture comes after the window, and skips the reversed deposit.
    await new Promise((resolve) => setTimeout(resolve, (CAPTURE_DELAY_SECONDS + 1.5) * 1000));
    expect(captured(authorization_id)).toBe(false);
    expect((await db()('deposits').where({ reference }).first('capture_state')).capture_state).toBe('reversed');

    const status = await merchant.action('refund_deposit_status', { reference });
    expect(status.body.data).toMatchObject({ refundable_amount: 0, currency: 'USD', refunds: [{ refund_reference: row.refund_reference, status: 'succeeded', method: 'reversal' }] });
    const again = await merchant.action('refund_deposit', { reference });
    expect(again.body).toEqual({ ...BAD_REQUEST, error: { amount: [REFUND_MESSAGES.exceedsRefundable] } });

    // The deposit's timeline shows the refund's events and ledger steps (subject and keys under DEP…).
    const events = await db()('events').where({ subject: reference }).orderBy('seq').pluck('type');
    expect(events).toEqual(expect.arrayContaining(['refund.created', 'refund.succeeded']));
    const keys = await db()('ledger_transactions').where('idempotency_key', 'like', `${reference}:refund:%`).pluck('idempotency_key');
    expect(keys).toEqual([`${reference}:refund:${row.refund_reference}:post`]);
    const hold = await db()('ledger_pending_transfers').where({ idempotency_key: `${reference}:refund:${row.refund_reference}:hold` }).first();
    expect(hold).toMatchObject({ state: 'posted', amount_units: 725n });
    const timeline = await merchant.action('list_timeline', { reference });
    const kinds = (timeline.body.data.entries as Array<{ kind: string }>).map((entry) => entry.kind);
    expect(kinds).toEqual(expect.arrayContaining(['refund.created', 'refund.succeeded', 'request.area-c.refund_deposit']));
  });

  it('fails the refund when the acquirer refuses the reversal, and the deposit is then captured as usual', async () => {
    const walletBefore = await userBalance(platform, payer.id);
    const { reference, authorization_id } = await cardDeposit(SANDBOX_CARDS.approved, 2);
    // An authorization the acquirer does not know: its reversal is refused ("Unknown authorization.").
    await db()('deposit_confirmations').where({ deposit_reference: reference, outcome: 'approved' }).update({ authorization_id: 'UNKNOWN-AUTHORIZATION' });
    const refund = await merchant.action('refund_deposit', { reference });
    expect(refund.body.data).toMatchObject({ method: 'reversal', status: 'held' });
    expect(await decided(refund.body.data.refund_reference)).toMatchObject({ status: 'failed', failure_reason: 'Unknown authorization.' });
    expect(await userBalance(platform, payer.id)).toBe(walletBefore + 200n);
    expect(await heldUnits(payer.id)).toBe(0n);
    // The workflow captures its own authorization after the window.
    await until('the capture', async () => ((await db()('deposits').where({ reference }).first('capture_state'))?.capture_state === 'captured' ? true : undefined));
    expect(captured(authorization_id)).toBe(true);
  });

  it('answers UNAVAILABLE when its workflow cannot start (the refund held); reconciliation starts it', async () => {
    const walletBefore = await userBalance(platform, payer.id);
    const { reference } = await capturedCardDeposit(SANDBOX_CARDS.approved, 3);
    const down = async () => {
      throw new Error('Temporal unreachable');
    };
    const temporal = { ...platform.deps.temporal, colocated: undefined, client: { workflow: { start: down } } };
    const broken = { ...platform.deps, temporal } as unknown as PlatformDeps;
    await expect(refundDeposit(broken, merchant.options.merchantId, { reference, amountUnits: 100n, reason: '' }, `own-${reference}`)).rejects.toMatchObject({ reason: 'UNAVAILABLE' });
    const [held] = await db()('deposit_refunds').where({ deposit_reference: reference });
    expect(held).toMatchObject({ status: 'held', amount_units: 100n });
    expect(await heldUnits(payer.id)).toBe(100n);

    const report = await reconcile(platform.deps, createReconciliationRepairs(platform.deps), { repair: true, grace_seconds: 0 });
    expect(report.findings).toContainEqual({ kind: 'deposit_refund_held', id: held.refund_reference, action: 'repaired', detail: 'deposit refund held with no workflow' });
    expect(await decided(held.refund_reference)).toMatchObject({ status: 'succeeded' });
    expect(await userBalance(platform, payer.id)).toBe(walletBefore + 200n);
  });

  it('waits while the capture is running (`capturing`), then refunds what it captured', async () => {
    const { reference } = await capturedCardDeposit(SANDBOX_CARDS.approved, 3);
    // As the capture activity leaves the row between its two steps (moved to `capturing`, the acquirer not answered).
    await db()('deposits').where({ reference }).update({ capture_state: 'capturing' });
    const refund = await merchant.action('refund_deposit', { reference, amount: 1 });
    expect(refund.body.data).toMatchObject({ status: 'held', method: 'refund' });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await db()('deposit_refunds').where({ refund_reference: refund.body.data.refund_reference }).first('status')).toEqual({ status: 'held' });
    await db()('deposits').where({ reference }).update({ capture_state: 'captured' });
    expect(await decided(refund.body.data.refund_reference)).toMatchObject({ status: 'succeeded' });
  });

  it('refunds a captured card deposit partly and then the rest, never above it (refused with nothing held)', async () => {
    const walletBefore = await userBalance(platform, payer.id);
    const { reference, authorization_id } = await capturedCardDeposit(SANDBOX_CARDS.approved, 10);

    const first = await merchant.action('refund_deposit', { reference, amount: 4 });
    expect(first.body.data).toMatchObject({ status: 'held', method: 'refund', amount: 4 });
    expect(await decided(first.body.data.refund_reference)).toMatchObject({ status: 'succeeded', acquirer_refund_id: expect.stringMatching(/^SBXRF/) });

    const above = await merchant.action('refund_deposit', { reference, amount: 6.01 });
    expect(above.body).toEqual({ ...BAD_REQUEST, error: { amount: [REFUND_MESSAGES.exceedsRefundable] } });
    expect(await refundCount(reference)).toBe(1);
    expect(await heldUnits(payer.id)).toBe(0n);

    const rest = await merchant.action('refund_deposit', { reference });
    expect(rest.body.data).toMatchObject({ amount: 6, method: 'refund' });
    expect(await decided(rest.body.data.refund_reference)).toMatchObject({ status: 'succeeded' });
    expect(acquirer().refunds.filter((entry) => entry.target === authorization_id).map((entry) => entry.amount_units)).toEqual([400n, 600n]);
    expect(await userBalance(platform, payer.id)).toBe(walletBefore);

    const status = await merchant.action('refund_deposit_status', { refund_reference: first.body.data.refund_reference });
    expect(status.body.data).toMatchObject({ refundable_amount: 0, refunds: [{ refund_reference: first.body.data.refund_reference, status: 'succeeded', amount: 4 }] });
  });

  it('voids the hold when the issuer declines the refund (test card 4000000000005126)', async () => {
    const walletBefore = await userBalance(platform, payer.id);
    const { reference } = await capturedCardDeposit(SANDBOX_CARDS.refundFails, 3);
    const refund = await merchant.action('refund_deposit', { reference, amount: 3 });
    expect(refund.status).toBe(200);
    expect(await decided(refund.body.data.refund_reference)).toMatchObject({ status: 'failed', failure_reason: REFUND_DECLINED_MESSAGE });
    expect(await userBalance(platform, payer.id)).toBe(walletBefore + 300n);
    expect(await heldUnits(payer.id)).toBe(0n);
    const status = await merchant.action('refund_deposit_status', { reference });
    expect(status.body.data).toMatchObject({ refundable_amount: 3, refunds: [{ status: 'failed', failure_reason: REFUND_DECLINED_MESSAGE }] });
    const events = await db()('events').where({ subject: reference }).pluck('type');
    expect(events).toContain('refund.failed');
  });

  it('refunds a local-card deposit at the acquirer, and refuses a bank-account deposit with nothing held', async () => {
    const walletBefore = await userBalance(platform, payer.id);
    const local = await otpDeposit('local_card', await tokenizeLocalCard(platform, merchant, payer.id), 2);
    const refund = await merchant.action('refund_deposit', { reference: local, amount: 1.5 });
    expect(refund.body.data).toMatchObject({ method: 'refund', amount: 1.5 });
    expect(await decided(refund.body.data.refund_reference)).toMatchObject({ status: 'succeeded' });
    expect(await userBalance(platform, payer.id)).toBe(walletBefore + 50n);

    const account = await tokenizeBankAccount(platform, merchant, payer.id);
    await activateBankAccount(platform, account);
    const bank = await otpDeposit('bank_account', account, 5);
    const refused = await merchant.action('refund_deposit', { reference: bank });
    expect(refused.body).toEqual({ ...BAD_REQUEST, error: { reference: [REFUND_MESSAGES.notSupported] } });
    expect(await refundCount(bank)).toBe(0);
    expect(await heldUnits(payer.id)).toBe(0n);
  });

  it('answers the first refund to the same signed body and to the same Idempotency-Key; the key with another body is 409', async () => {
    const { reference } = await capturedCardDeposit(SANDBOX_CARDS.approved, 5);
    const body = { reference, amount: 1, request_id: `refund-${reference}-1` };
    const first = await merchant.action('refund_deposit', body);
    const replay = await merchant.action('refund_deposit', body);
    expect(replay.body).toEqual(first.body);

    const keyed = { headers: { 'Idempotency-Key': `key-${reference}` } };
    const byKey = await merchant.action('refund_deposit', { reference, amount: 2 }, keyed);
    const byKeyAgain = await merchant.action('refund_deposit', { reference, amount: 2 }, keyed);
    expect(byKeyAgain.body.data.refund_reference).toBe(byKey.body.data.refund_reference);
    const conflict = await merchant.action('refund_deposit', { reference, amount: 3 }, keyed);
    expect(conflict.status).toBe(409);

    await decided(first.body.data.refund_reference);
    await decided(byKey.body.data.refund_reference);
    expect(await refundCount(reference)).toBe(2);
    const status = await merchant.action('refund_deposit_status', { reference });
    expect(status.body.data.refundable_amount).toBe(2);
  });

  it("refuses another merchant's deposit, an unknown one and a pending one, with nothing held", async () => {
    const { reference } = await capturedCardDeposit(SANDBOX_CARDS.approved, 2);
    const foreign = await other.action('refund_deposit', { reference });
    expect(foreign.body).toEqual({ ...BAD_REQUEST, error: { reference: ['The selected reference is invalid.'] } });
    const unknown = await merchant.action('refund_deposit', { reference: 'DEP000000000000000000' });
    expect(unknown.body).toEqual(foreign.body);
    const foreignStatus = await other.action('refund_deposit_status', { reference });
    expect(foreignStatus.body).toEqual(foreign.body);

    const token = await tokenizeVisaMaster(platform, merchant, payer.id);
    const pending = await merchant.action('deposit_by_visa_master', { token, amount: 1, currency: 'USD', security_code: encryptedSecurityCode(platform) });
    const notCompleted = await merchant.action('refund_deposit', { reference: pending.body.data.reference });
    expect(notCompleted.body).toEqual({ ...BAD_REQUEST, error: { reference: [REFUND_MESSAGES.notCompleted] } });
    expect(await refundCount(reference)).toBe(0);
  });

  it('refunds a preorder paid by deposit whole: the seller debited the amount less commission, fee_revenue the commission', async () => {
    const callBack = 'http://127.0.0.1:9/preorder-call-back';
    const preorder = await newPreorder(merchant, { seller_code: seller.wallet_ref, amount: 20, commission_rate: 2.5, call_back_url: callBack });
    const [payerBefore, sellerBefore, revenueBefore, settlementBefore] = [
      await userBalance(platform, payer.id),
      await userBalance(platform, seller.id),
      await platformBalance(platform, 'fee_revenue'),
      await platformBalance(platform, 'settlement'),
    ];
    const { reference } = await capturedCardDeposit(SANDBOX_CARDS.approved, 20, { pre_order_token: preorder.pre_order_token, user_id: payer.id });
    expect(await userBalance(platform, seller.id)).toBe(sellerBefore + 1950n);

    const partial = await merchant.action('refund_deposit', { reference, amount: 10 });
    expect(partial.body).toEqual({ ...BAD_REQUEST, error: { amount: [REFUND_MESSAGES.preorderWholeOnly] } });

    const refund = await merchant.action('refund_deposit', { reference });
    expect(await decided(refund.body.data.refund_reference)).toMatchObject({ status: 'succeeded', commission_units: 50n });
    expect(await userBalance(platform, seller.id)).toBe(sellerBefore);
    expect(await platformBalance(platform, 'fee_revenue')).toBe(revenueBefore);
    expect(await platformBalance(platform, 'settlement')).toBe(settlementBefore);
    expect(await userBalance(platform, payer.id)).toBe(payerBefore);
    // The preorder's call_back_url gets the decision, signed and durable like its preorder.paid.
    const webhook = await db()('webhook_events').where({ id: `WH-${reference}-REFUND-${refund.body.data.refund_reference}-SUCCEEDED` }).first();
    expect(webhook).toMatchObject({ event: 'refund.succeeded', callback_url: callBack, invoice_reference: reference });
    expect(JSON.parse(webhook.body)).toMatchObject({ event: 'refund.succeeded', reference, pre_order_token: preorder.pre_order_token, amount: 20, status: 'succeeded' });
  });

  it('a capture that finds a reversal running (`reversing`) never captures: retried until `reversed`, then skipped', async () => {
    const { reference, authorization_id } = await cardDeposit(SANDBOX_CARDS.approved, 1.5);
    // As refund_deposit leaves the row while its reversal is at the acquirer; the capture activity races it.
    await db()('deposits').where({ reference }).update({ capture_state: 'reversing' });
    const settle = () => createDepositActivities(platform.deps).settleDepositCard({ reference, authorization_id, capture: true });
    await expect(settle()).rejects.toMatchObject({ type: 'DEPOSIT_REVERSAL_RUNNING', nonRetryable: false });
    expect(captured(authorization_id)).toBe(false);
    expect((await db()('deposits').where({ reference }).first('capture_state')).capture_state).toBe('reversing');
    await db()('deposits').where({ reference }).update({ capture_state: 'reversed' });
    await expect(settle()).resolves.toBeUndefined();
    expect(captured(authorization_id)).toBe(false);
    expect((await db()('deposits').where({ reference }).first('capture_state')).capture_state).toBe('reversed');
    // The deposit's own workflow capture after the window skips it too.
    await new Promise((resolve) => setTimeout(resolve, (CAPTURE_DELAY_SECONDS + 1.5) * 1000));
    expect(captured(authorization_id)).toBe(false);
  });
});

describe("a deposit refund's timeline", () => {
  it('answers the deposit\'s timeline for its DRF… (with the refund workflow), to its merchant and operators only', async () => {
    const { reference } = await capturedCardDeposit(SANDBOX_CARDS.approved, 1.25);
    const refund = await merchant.action('refund_deposit', { reference, amount: 0.25 });
    const refund_reference = refund.body.data.refund_reference as string;
    await decided(refund_reference);

    const operator = await platform.clients.timeline.getPaymentTimeline({ reference: refund_reference });
    expect(operator.reference).toBe(reference);
    expect(operator.refundReference).toBe(refund_reference);
    const kinds = operator.entries.map((entry) => entry.kind);
    expect(kinds).toEqual(expect.arrayContaining(['request.area-c.refund_deposit', 'refund.created', 'refund.succeeded', 'ledger.hold_posted']));
    const workflowIds = new Set(operator.entries.filter((entry) => entry.source === 'workflow').map((entry) => (JSON.parse(entry.detailsJson) as { workflow_id?: string }).workflow_id));
    // The deposit's own workflow and the refund's.
    expect(workflowIds).toEqual(new Set([reference, refund_reference]));
    // Asked by the deposit's reference: the deposit's alone, as before.
    const ofDeposit = await platform.clients.timeline.getPaymentTimeline({ reference });
    expect(ofDeposit.refundReference).toBe('');

    const mine = await merchant.action('list_timeline', { reference: refund_reference });
    expect(mine.status).toBe(200);
    expect(mine.body.data.reference).toBe(reference);
    expect((mine.body.data.entries as Array<{ kind: string }>).map((entry) => entry.kind)).toEqual(expect.arrayContaining(['refund.created', 'refund.succeeded']));
    const theirs = await other.action('list_timeline', { reference: refund_reference });
    const unknown = await other.action('list_timeline', { reference: 'DRFNOSUCHREFUND0000000' });
    expect(theirs.body).toEqual(unknown.body);
    expect(theirs.body.success).toBe(false);
  });
});

describe('operators: payments admin deposit-refunds', () => {
  const admin = (args: string[]) => runAdminCli(platform, args);

  it('lists (of one merchant or all) and shows deposit refunds with --json; an unknown one exits 1', async () => {
    const { reference } = await capturedCardDeposit(SANDBOX_CARDS.approved, 2);
    const refund = await merchant.action('refund_deposit', { reference, amount: 0.5, reason: 'operator view' });
    const refund_reference = refund.body.data.refund_reference as string;
    const row = await decided(refund_reference);

    const listed = await admin(['deposit-refunds', 'list', '--merchant-id', merchant.options.merchantId, '--json']);
    expect(listed.code).toBe(0);
    const refunds = listed.json!.refunds as Array<{ refund_reference: string; merchant_id: string }>;
    expect(refunds.map((entry) => entry.refund_reference)).toContain(refund_reference);
    expect(new Set(refunds.map((entry) => entry.merchant_id))).toEqual(new Set([merchant.options.merchantId]));
    const ofOther = await admin(['deposit-refunds', 'list', '--merchant-id', other.options.merchantId, '--json']);
    expect(ofOther.json).toEqual({ refunds: [] });
    const limited = await admin(['deposit-refunds', 'list', '--limit', '1', '--json']);
    expect((limited.json!.refunds as unknown[]).length).toBe(1);
    expect((await admin(['deposit-refunds', 'list', '--limit', '0', '--json'])).code).toBe(1);

    const shown = await admin(['deposit-refunds', 'show', refund_reference, '--json']);
    expect(shown.code).toBe(0);
    expect(shown.json!.refund).toEqual({
      refund_reference,
      merchant_id: merchant.options.merchantId,
      deposit_reference: reference,
      method: 'refund',
      status: 'succeeded',
      amount_units: '50',
      commission_units: '0',
      currency: 'USD',
      reason: 'operator view',
      acquirer_refund_id: row.acquirer_refund_id,
      failure_reason: null,
      created_at: expect.any(String),
      decided_at: expect.any(String),
    });
    const unknown = await admin(['deposit-refunds', 'show', 'DRFNOSUCHREFUND0000000', '--json']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/DEPOSIT_REFUND_NOT_FOUND|not found/i);
  });

  it("refuses the operators' RPCs to a merchant-bound credential (PERMISSION_DENIED)", async () => {
    const { token } = await createServiceCredential(db(), { name: 'deposit refunds bound', scopes: [`merchant:${merchant.options.merchantId}`] });
    const bound = createPlatformClients(platform.rpcUrl, { credentials: { token } }).deposit;
    const code = (call: Promise<unknown>) => call.then(() => 'ok', (error: unknown) => Code[ConnectError.from(error).code]);
    expect(await code(bound.operatorListDepositRefunds({ merchantId: merchant.options.merchantId }))).toBe('PermissionDenied');
    expect(await code(bound.operatorShowDepositRefund({ refundReference: 'DRFNOSUCHREFUND0000000' }))).toBe('PermissionDenied');
    expect(await code(platform.clients.deposit.operatorShowDepositRefund({ refundReference: 'DRFNOSUCHREFUND0000000' }))).toBe('NotFound');
  });
});
