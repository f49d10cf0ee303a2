/**
 * Temporal messages carry no authority (docs/security.md "Temporal messages"): anyone who reaches the Temporal
 * frontend can send an Update or a signal to any workflow, or start one, so every step that moves money (or ends the
 * record money would move for) re-reads the record the authenticated request path wrote: the payer's confirmation
 * (deposit_confirmations), the upstream's verified notification (upstream_notifications). This file is the attacker:
 * a plain Temporal client sending messages by reference, against real PostgreSQL and Temporal. After each forged
 * message the ledger and the record are unchanged, and the rightful path still works.
 */
import { hmacSha256Hex } from '../../src/crypto/hmac';
import { confirmWithPasswordUpdate, submitCardConfirmationUpdate, type DepositWorkflowInput } from '../../src/flows/deposit/contract';
import { sealDepositPassword } from '../../src/flows/deposit/sealing';
import { closedSignal, notifyUpdate, settledSignal } from '../../src/flows/payin/contract';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { depositWorkflow } from '../../workflows/deposit';
import { payinWorkflow } from '../../workflows/payin';
import { WithStartWorkflowOperation } from '@temporalio/client';
import {
  encryptedSecurityCode,
  formAction,
  loggedInMerchant,
  newUser,
  platformBalance,
  tokenizeLocalCard,
  tokenizeVisaMaster,
  userBalance,
} from '../support/deposit-setup';
import type { MerchantClient } from '../support/merchant-client';
import { createTestMerchant, eventually, post, startPayinHarness, UPSTREAM_WEBHOOK_SECRET, type PayinHarness } from '../support/payin-setup';

const OTP = '123456';

describe('Temporal messages sent straight to the frontend', () => {
  let harness: PayinHarness;
  let merchant: MerchantClient;
  let payer: { id: number };
  let visaCard: string;
  let localCard: string;
  let payinMerchant: MerchantCredentials;

  beforeAll(async () => {
    harness = await startPayinHarness({ env: { PAYIN_TTL_SECONDS: '3600', DEPOSIT_MAX_OTP_ATTEMPTS: '3', SANDBOX_OTP: OTP } });
    merchant = await loggedInMerchant(harness.platform, 'Forgery Target');
    payer = await newUser(merchant, 'Payer');
    visaCard = await tokenizeVisaMaster(harness.platform, merchant, payer.id);
    localCard = await tokenizeLocalCard(harness.platform, merchant, payer.id);
    payinMerchant = await createTestMerchant(harness, { payin_fee_percent: '1' });
    harness.receiver.configure({ hmac_secret: payinMerchant.hmac_secret, signature_header: payinMerchant.signature_header });
  });
  afterAll(() => harness.stop());

  const platform = () => harness.platform;
  const temporal = () => harness.platform.deps.temporal;
  const database = () => harness.platform.deps.database;
  const deposit = (reference: string) => database()('deposits').where({ reference }).first();
  /** The user's wallet and the platform's USD settlement account, posted units. */
  const depositBalances = async () => [await userBalance(platform(), payer.id), await platformBalance(platform(), 'settlement')];
  /** What a Temporal message is answered, or the name of the error it failed with. */
  const outcomeOf = async (message: Promise<unknown>) => message.then((value) => ({ answered: value }), (error: Error) => ({ failed: error.name }));

  describe('deposits', () => {
    const startCardDeposit = async (amount: number) => {
      const started = await merchant.action('deposit_by_visa_master', { token: visaCard, amount, currency: 'USD', security_code: encryptedSecurityCode(platform()) });
      expect(started.status).toBe(200);
      return started.body.data as { reference: string; token: string; html_confirm_payment: string };
    };
    const startOtpDeposit = async (amount: number) => {
      const started = await merchant.action('deposit_by_local_card', { token: localCard, amount, currency: 'USD' });
      expect(started.status).toBe(200);
      return started.body.data as { reference: string; token: string };
    };
    /** The payer's submission of the confirmation page, through the façade. */
    const submitForm = async (html: string) => {
      const action = formAction(html)!.replace(`${platform().config.PUBLIC_BASE_URL}${platform().config.MERCHANT_PREFIX}`, platform().facadeUrl);
      const response = await fetch(action, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' });
      await response.arrayBuffer();
      return response.status;
    };

    it('a submitCardConfirmation Update moves nothing and leaves the deposit pending; the payer’s form still confirms it', async () => {
      const card = await startCardDeposit(7);
      const before = await depositBalances();
      const handle = temporal().client.workflow.getHandle<typeof depositWorkflow>(card.reference);
      const forged = await outcomeOf(handle.executeUpdate(submitCardConfirmationUpdate, { args: [{ confirmation_id: 'DCF0000000000000000000000000000000' }] }));
      expect(forged).toHaveProperty('failed');
      expect(await depositBalances()).toEqual(before);
      expect(await deposit(card.reference)).toMatchObject({ state: 'pending', ledger_transaction_id: null });

      // The rightful path: the payer submits the confirmation page; the deposit completes once.
      expect(await submitForm(card.html_confirm_payment)).toBe(200);
      expect(await deposit(card.reference)).toMatchObject({ state: 'completed' });
      expect(await depositBalances()).toEqual([before[0]! + 700n, before[1]! - 700n]);
      const [record] = await database()('deposit_confirmations').where({ deposit_reference: card.reference });
      expect(record).toMatchObject({ method: 'card_form', actor: 'payer', outcome: 'approved', client_address: expect.any(String) });
    });

    it('a confirmWithPassword Update, even one carrying the right password sealed, moves nothing and counts no attempt', async () => {
      const otp = await startOtpDeposit(5);
      const before = await depositBalances();
      const handle = temporal().client.workflow.getHandle<typeof depositWorkflow>(otp.reference);
      const sealed_password = sealDepositPassword(platform().deps.keys.dataKeys, otp.reference, OTP);
      for (let attempt = 0; attempt < 3; attempt += 1) {
        const forged = await outcomeOf(handle.executeUpdate(confirmWithPasswordUpdate, { args: [{ confirmation_id: `DCF-FORGED-${attempt}`, sealed_password }] }));
        expect(forged).toHaveProperty('failed');
      }
      const wrong = sealDepositPassword(platform().deps.keys.dataKeys, otp.reference, '999999');
      for (let attempt = 0; attempt < 3; attempt += 1) {
        expect(await outcomeOf(handle.executeUpdate(confirmWithPasswordUpdate, { args: [{ confirmation_id: `DCF-WRONG-${attempt}`, sealed_password: wrong }] }))).toHaveProperty('failed');
      }
      expect(await depositBalances()).toEqual(before);
      expect(await deposit(otp.reference)).toMatchObject({ state: 'pending', ledger_transaction_id: null });
      expect(await handle.query('state')).toEqual({ state: 'pending', wrong_passwords: 0 });

      // The rightful path: the merchant's verified confirm_payments.
      const confirmed = await merchant.action('confirm_payments', { user_id: payer.id, token: otp.token, password: OTP });
      expect(confirmed.status).toBe(200);
      expect(await depositBalances()).toEqual([before[0]! + 500n, before[1]! - 500n]);
      const [record] = await database()('deposit_confirmations').where({ deposit_reference: otp.reference });
      expect(record).toMatchObject({ method: 'password', actor: 'merchant', outcome: 'password_valid', user_id: BigInt(payer.id) });
    });

    it('a workflow the attacker starts for someone else’s deposit moves nothing', async () => {
      const card = await startCardDeposit(3);
      const otp = await startOtpDeposit(4);
      const before = await depositBalances();
      const forgedRuns = [
        { reference: card.reference, confirmation: 'card_form' as const },
        { reference: otp.reference, confirmation: 'password' as const },
      ];
      for (const { reference, confirmation } of forgedRuns) {
        const input: DepositWorkflowInput = { reference, confirmation, ttl_seconds: 600, max_password_attempts: 20 };
        const handle = await temporal().client.workflow.start(depositWorkflow, { taskQueue: temporal().taskQueue, workflowId: `ATTACK-${reference}`, args: [input] });
        try {
          const forged =
            confirmation === 'card_form'
              ? handle.executeUpdate(submitCardConfirmationUpdate, { args: [{ confirmation_id: 'DCF-FORGED' }] })
              : handle.executeUpdate(confirmWithPasswordUpdate, { args: [{ confirmation_id: 'DCF-FORGED', sealed_password: sealDepositPassword(platform().deps.keys.dataKeys, reference, OTP) }] });
          expect(await outcomeOf(forged)).toHaveProperty('failed');
        } finally {
          await handle.terminate('test over');
        }
      }
      expect(await depositBalances()).toEqual(before);
      expect(await deposit(card.reference)).toMatchObject({ state: 'pending' });
      expect(await deposit(otp.reference)).toMatchObject({ state: 'pending' });
      // Both still confirm the rightful way.
      expect(await submitForm(card.html_confirm_payment)).toBe(200);
      expect((await merchant.action('confirm_payments', { user_id: payer.id, token: otp.token, password: OTP })).status).toBe(200);
      expect(await depositBalances()).toEqual([before[0]! + 700n, before[1]! - 700n]);
    });

    it('a recorded confirmation authorizes its own deposit once: replayed there or on another deposit it moves nothing', async () => {
      const first = await startCardDeposit(2);
      expect(await submitForm(first.html_confirm_payment)).toBe(200);
      const used = (await database()('deposit_confirmations').where({ deposit_reference: first.reference }).first()) as { id: string } | undefined;
      // Before the records existed there is nothing to replay: the forged id of the first test stands in.
      const confirmation_id = used?.id ?? 'DCF0000000000000000000000000000000';
      const second = await startCardDeposit(6);
      const before = await depositBalances();
      const replay = temporal().client.workflow.getHandle<typeof depositWorkflow>(second.reference).executeUpdate(submitCardConfirmationUpdate, { args: [{ confirmation_id }] });
      expect(await outcomeOf(replay)).toHaveProperty('failed');
      expect(await depositBalances()).toEqual(before);
      expect(await deposit(second.reference)).toMatchObject({ state: 'pending' });
      expect(await database()('deposit_confirmations').where({ deposit_reference: second.reference })).toEqual([]);
    });
  });

  describe('payins', () => {
    const createPayin = async (amount: string) => {
      const out_trade_no = `FORGE-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
      const response = await post(platform().facadeUrl, '/api/v1/payins', `{"amount": ${amount}, "out_trade_no": "${out_trade_no}"}`, { 'X-API-Key': payinMerchant.api_key });
      expect(response.status).toBe(200);
      const invoice_reference = response.json.data.invoice_reference as string;
      // The outbox dispatcher starts its workflow.
      await eventually(async () => (await temporal().client.workflow.getHandle(invoice_reference).describe().catch(() => undefined))?.status.name === 'RUNNING', 20_000);
      return invoice_reference;
    };
    const payinRow = (invoice_reference: string) => database()('payins').where({ invoice_reference }).first();
    const walletUnits = async () => {
      const accounts = await platform().deps.ledger.accountsOf('merchant', payinMerchant.merchant_id);
      return accounts.find((account) => account.kind === 'wallet' && account.currency === 'USDT')?.posted_units ?? 0n;
    };
    const signedNotification = (body: Record<string, unknown>) => {
      const text = JSON.stringify({ currency: 'USDT', ...body });
      return post(platform().facadeUrl, '/api/v1/upstream/notifications', text, { 'X-Upstream-Signature': hmacSha256Hex(UPSTREAM_WEBHOOK_SECRET, text) });
    };
    const withStart = (invoice_reference: string) =>
      new WithStartWorkflowOperation(payinWorkflow, {
        taskQueue: temporal().taskQueue,
        workflowId: invoice_reference,
        workflowIdConflictPolicy: 'USE_EXISTING',
        args: [{ invoice_reference, ttl_seconds: 3600 }],
      });
    const webhooksOf = (invoice_reference: string) => harness.receiver.received.filter((item) => item.json.data.invoice_reference === invoice_reference);

    it('a closed signal, a close notify Update and their with-Start forms leave a waiting payin waiting; the signed close still closes it', async () => {
      const invoice_reference = await createPayin('3');
      const handle = temporal().client.workflow.getHandle<typeof payinWorkflow>(invoice_reference);
      await handle.signal(closedSignal, { trx_ref: 'FORGED-CLOSE' });
      const update = await handle.executeUpdate(notifyUpdate, { args: [{ status: 'close', trx_ref: 'FORGED-CLOSE-2' }] });
      expect(update).toMatchObject({ webhook_id: null, refused: 'CLOSE_NOT_AUTHORIZED' });
      await temporal().client.workflow.signalWithStart(payinWorkflow, {
        taskQueue: temporal().taskQueue,
        workflowId: invoice_reference,
        args: [{ invoice_reference, ttl_seconds: 3600 }],
        signal: closedSignal,
        signalArgs: [{ trx_ref: 'FORGED-CLOSE-3' }],
      });
      const withStartUpdate = await temporal().client.workflow.executeUpdateWithStart(notifyUpdate, {
        args: [{ status: 'close', trx_ref: 'FORGED-CLOSE-4' }],
        startWorkflowOperation: withStart(invoice_reference),
      });
      expect(withStartUpdate).toMatchObject({ webhook_id: null, refused: 'CLOSE_NOT_AUTHORIZED' });
      expect(await payinRow(invoice_reference)).toMatchObject({ status: 'waiting' });
      expect((await handle.describe()).status.name).toBe('RUNNING');
      expect(webhooksOf(invoice_reference)).toEqual([]);

      // The upstream's signed close, verified and recorded by the api, closes it.
      const closed = await signedNotification({ invoice_reference, status: 'close', amount: 0, trx_ref: 'UPSTREAM-CLOSE' });
      expect(closed.json.data).toEqual({ invoice_reference, status: 'close', applied: true });
      expect(await payinRow(invoice_reference)).toMatchObject({ status: 'close' });
      await harness.receiver.waitFor(() => webhooksOf(invoice_reference).length >= 1, 20_000);
      expect(webhooksOf(invoice_reference).map((item) => item.json.event)).toEqual(['payin.closed']);
    });

    it('a settled signal, a notify Update and their with-Start forms credit nothing; the signed success settles once', async () => {
      const invoice_reference = await createPayin('4');
      const before = await walletUnits();
      const handle = temporal().client.workflow.getHandle<typeof payinWorkflow>(invoice_reference);
      const forged = { amount_units: '900000000', trx_ref: 'FORGED-PAY' };
      await handle.signal(settledSignal, forged);
      expect(await handle.executeUpdate(notifyUpdate, { args: [{ status: 'success', ...forged }] })).toMatchObject({ webhook_id: null, refused: 'SETTLEMENT_NOT_AUTHORIZED' });
      await temporal().client.workflow.signalWithStart(payinWorkflow, {
        taskQueue: temporal().taskQueue,
        workflowId: invoice_reference,
        args: [{ invoice_reference, ttl_seconds: 3600 }],
        signal: settledSignal,
        signalArgs: [forged],
      });
      const withStartUpdate = await temporal().client.workflow.executeUpdateWithStart(notifyUpdate, {
        args: [{ status: 'success', ...forged }],
        startWorkflowOperation: withStart(invoice_reference),
      });
      expect(withStartUpdate).toMatchObject({ webhook_id: null, refused: 'SETTLEMENT_NOT_AUTHORIZED' });
      expect(await walletUnits()).toBe(before);
      expect(await payinRow(invoice_reference)).toMatchObject({ status: 'waiting', paid_amount_units: null });

      const paid = await signedNotification({ invoice_reference, status: 'success', amount: 4, trx_ref: 'UPSTREAM-PAY' });
      expect(paid.json.data).toEqual({ invoice_reference, status: 'success', applied: true });
      expect(await walletUnits()).toBe(before + 4_000_000n - 40_000n);
      // The forged messages, sent again after the settlement, credit nothing more.
      await handle.signal(settledSignal, forged).catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await walletUnits()).toBe(before + 4_000_000n - 40_000n);
      expect(await payinRow(invoice_reference)).toMatchObject({ status: 'success', paid_amount_units: 4_000_000n });
    });

    it('another spelling of a recorded payment’s amount credits nothing more, however it is sent', async () => {
      const invoice_reference = await createPayin('4');
      expect((await signedNotification({ invoice_reference, status: 'success', amount: 4, trx_ref: 'UPSTREAM-FIRST' })).json.data.applied).toBe(true);
      // A second payment of the settled payin: credited and announced as an additional payment.
      expect((await signedNotification({ invoice_reference, status: 'success', amount: 2, trx_ref: 'UPSTREAM-SECOND' })).json.data.applied).toBe(true);
      const before = await walletUnits();
      const ledgerTransactions = async () => Number((await database()('ledger_transactions').where('idempotency_key', 'like', `${invoice_reference}:%`).count({ n: '*' }))[0]!.n);
      expect(await ledgerTransactions()).toBe(2);

      // The same recorded payment, its amount spelled another way: each spelling once named a ledger key of its own.
      const spellings = ['02000000', ' 2000000', '0x1E8480', '2000000 '];
      for (const amount_units of spellings) {
        const answer = await outcomeOf(
          temporal().client.workflow.executeUpdateWithStart(notifyUpdate, { args: [{ status: 'success', amount_units, trx_ref: 'UPSTREAM-SECOND' }], startWorkflowOperation: withStart(invoice_reference) }),
        );
        expect(answer).toEqual({ failed: 'WorkflowUpdateFailedError' });
      }
      const handle = await temporal().client.workflow.signalWithStart(payinWorkflow, {
        taskQueue: temporal().taskQueue,
        workflowId: invoice_reference,
        args: [{ invoice_reference, ttl_seconds: 3600 }],
        signal: settledSignal,
        signalArgs: [{ amount_units: spellings[0]!, trx_ref: 'UPSTREAM-SECOND' }],
      });
      for (const amount_units of spellings.slice(1)) await handle.signal(settledSignal, { amount_units, trx_ref: 'UPSTREAM-SECOND' });
      // The run handles its messages in order: once this repeat of the recorded payment is answered, the signals were handled.
      expect(await handle.executeUpdate(notifyUpdate, { args: [{ status: 'success', amount_units: '2000000', trx_ref: 'UPSTREAM-SECOND' }] })).toMatchObject({
        webhook_id: expect.stringContaining('ADDITIONAL'),
      });
      expect(await walletUnits()).toBe(before);
      expect(await ledgerTransactions()).toBe(2);
      expect((await platform().deps.ledger.check()).ok).toBe(true);
    });
  });
});
