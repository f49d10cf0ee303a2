/**
 * Area C deposits over HTTP (docs/area-c.md "Deposits and confirmations"): deposit_by_local_card,
 * deposit_by_bank_account and deposit_by_visa_master with and without a preorder, confirm_payments (OTP right,
 * wrong, attempts limit, twice, concurrently, after expiry), the Visa/Master confirmation form (approve, decline,
 * redirect, hidden input), the hosted preorder page over plain HTTP, instruments of another user or merchant, and
 * balances before/after. Real PostgreSQL, Temporal, RPC and façade; `stop()` checks the ledger balances.
 */
import { insertInstrument } from '../../src/instruments/store';
import { createUser } from '../../src/onboarding';
import { DEPOSIT_MESSAGES, MESSAGES } from '../../rest-facade/merchant/contract';
import {
  activateBankAccount,
  decodeResult,
  encryptedSecurityCode,
  formAction,
  hiddenResult,
  loggedInMerchant,
  newPreorder,
  newUser,
  platformBalance,
  SANDBOX_CARDS,
  tokenizeBankAccount,
  tokenizeLocalCard,
  tokenizeVisaMaster,
  userBalance,
} from '../support/deposit-setup';
import type { MerchantClient } from '../support/merchant-client';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { fundUser } from '../support/wallets';
import type { SandboxSettlements } from '../../src/sandbox/acquirer';

const BAD_REQUEST = { success: false, code: 400, message: 'Bad Request' };
const OTP = '123456';

/** The façade URL of an absolute platform URL (PUBLIC_BASE_URL differs from the test façade's port). */
function local(platform: TestPlatform, url: string): string {
  return url.replace(`${platform.config.PUBLIC_BASE_URL}${platform.config.MERCHANT_PREFIX}`, platform.facadeUrl);
}

async function submitConfirmation(platform: TestPlatform, html: string) {
  const action = formAction(html);
  expect(action).toMatch(/\/visa-master\/confirm\/dtk_[A-Za-z0-9_-]{32}$/);
  return fetch(local(platform, action!), { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' });
}

async function depositState(platform: TestPlatform, reference: string): Promise<string> {
  const row = await platform.deps.database('deposits').where({ reference }).first('state');
  return row.state;
}

describe('Area C deposits', () => {
  let platform: TestPlatform;
  let merchant: MerchantClient;
  let other: MerchantClient;
  let payer: { id: number; wallet_ref: string };
  let seller: { id: number; wallet_ref: string };
  let localCard: string;
  let visaCard: string;
  let declinedCard: string;

  beforeAll(async () => {
    // inProcess: the card tests read the sandbox acquirer's record, kept in the platform's own process.
    platform = await startTestPlatform({ env: { DEPOSIT_MAX_OTP_ATTEMPTS: '3' }, inProcess: true });
    merchant = await loggedInMerchant(platform, 'Angkor Mart');
    other = await loggedInMerchant(platform, 'Other Shop');
    payer = await newUser(merchant, 'Payer');
    seller = await newUser(merchant, 'Seller');
    localCard = await tokenizeLocalCard(platform, merchant, payer.id);
    visaCard = await tokenizeVisaMaster(platform, merchant, payer.id);
    declinedCard = await tokenizeVisaMaster(platform, merchant, payer.id, SANDBOX_CARDS.declined);
  });
  afterAll(() => platform.stop());

  describe('deposit_by_local_card (OTP)', () => {
    it('credits the wallet from settlement once the OTP is confirmed, exactly once', async () => {
      const [walletBefore, settlementBefore] = [await userBalance(platform, payer.id), await platformBalance(platform, 'settlement')];
      const started = await merchant.action('deposit_by_local_card', { token: localCard, amount: 12.5, currency: 'USD' });
      expect(started.status).toBe(200);
      expect(started.body.data).toEqual({
        reference: expect.stringMatching(/^DEP[A-Z0-9]{18}$/),
        token: expect.stringMatching(/^dtk_[A-Za-z0-9_-]{32}$/),
        token_type: 1,
        need_verify_trx: true,
        html_confirm_payment: '',
      });
      const { token, reference } = started.body.data;
      expect(await userBalance(platform, payer.id)).toBe(walletBefore); // nothing moves before confirmation

      const wrong = await merchant.action('confirm_payments', { user_id: payer.id, token, password: '000000' });
      expect(wrong.body).toEqual({ ...BAD_REQUEST, error: { password: [DEPOSIT_MESSAGES.passwordIncorrect] } });
      expect(await userBalance(platform, payer.id)).toBe(walletBefore);

      const confirmed = await merchant.action('confirm_payments', { user_id: payer.id, token, password: OTP });
      expect(confirmed.status).toBe(200);
      expect(confirmed.body).toEqual({ success: true, code: 200, message: 'OK', data: [] });
      expect(await userBalance(platform, payer.id)).toBe(walletBefore + 1250n);
      expect(await platformBalance(platform, 'settlement')).toBe(settlementBefore - 1250n);
      expect(await depositState(platform, reference)).toBe('completed');

      const again = await merchant.action('confirm_payments', { user_id: payer.id, token, password: OTP });
      expect(again.body).toEqual({ ...BAD_REQUEST, error: { token: [DEPOSIT_MESSAGES.confirmed] } });
      expect(await userBalance(platform, payer.id)).toBe(walletBefore + 1250n);
    });

    it('cancels the deposit at the 3rd wrong OTP; the right one afterwards is refused and nothing moves', async () => {
      const before = await userBalance(platform, payer.id);
      const started = await merchant.action('deposit_by_local_card', { token: localCard, amount: '3', currency: 'USD' });
      const { token, reference } = started.body.data;
      for (let attempt = 1; attempt <= 2; attempt += 1) {
        const wrong = await merchant.action('confirm_payments', { user_id: payer.id, token, password: '111111' });
        expect(wrong.body.error).toEqual({ password: [DEPOSIT_MESSAGES.passwordIncorrect] });
      }
      const third = await merchant.action('confirm_payments', { user_id: payer.id, token, password: '111111' });
      expect(third.body).toEqual({ ...BAD_REQUEST, error: { password: [DEPOSIT_MESSAGES.passwordIncorrect], token: [DEPOSIT_MESSAGES.cancelled] } });
      const right = await merchant.action('confirm_payments', { user_id: payer.id, token, password: OTP });
      expect(right.body).toEqual({ ...BAD_REQUEST, error: { token: [DEPOSIT_MESSAGES.cancelled] } });
      expect(await depositState(platform, reference)).toBe('cancelled');
      expect(await userBalance(platform, payer.id)).toBe(before);
    });

    it('of many concurrent confirmations exactly one completes the deposit', async () => {
      const before = await userBalance(platform, payer.id);
      const started = await merchant.action('deposit_by_local_card', { token: localCard, amount: 1, currency: 'USD' });
      const { token } = started.body.data;
      const answers = await Promise.all(
        Array.from({ length: 5 }, () => merchant.action('confirm_payments', { user_id: payer.id, token, password: OTP })),
      );
      expect(answers.filter((answer) => answer.status === 200)).toHaveLength(1);
      for (const answer of answers.filter((candidate) => candidate.status !== 200)) {
        expect(answer.body).toEqual({ ...BAD_REQUEST, error: { token: [DEPOSIT_MESSAGES.confirmed] } });
      }
      expect(await userBalance(platform, payer.id)).toBe(before + 100n);
    });

    it('refuses the confirmation of another user, an unknown token and missing fields', async () => {
      const started = await merchant.action('deposit_by_local_card', { token: localCard, amount: 1, currency: 'USD' });
      const { token } = started.body.data;
      const otherUser = await merchant.action('confirm_payments', { user_id: seller.id, token, password: OTP });
      expect(otherUser.body).toEqual({ ...BAD_REQUEST, error: { token: [DEPOSIT_MESSAGES.tokenInvalid] } });
      const unknown = await merchant.action('confirm_payments', { user_id: payer.id, token: 'dtk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', password: OTP });
      expect(unknown.body).toEqual({ ...BAD_REQUEST, error: { token: [DEPOSIT_MESSAGES.tokenInvalid] } });
      const otherMerchant = await other.action('confirm_payments', { user_id: payer.id, token, password: OTP });
      expect(otherMerchant.body).toEqual({ ...BAD_REQUEST, error: { user_id: [MESSAGES.userNotFound('user_id')] } });
      const missing = await merchant.action('confirm_payments', {});
      expect(missing.body).toEqual({
        ...BAD_REQUEST,
        error: { user_id: [MESSAGES.required('user_id')], token: [MESSAGES.required('token')], password: [MESSAGES.required('password')] },
      });
      expect(await depositState(platform, started.body.data.reference)).toBe('pending');
    });
  });

  describe('a deposit start retried with the same Idempotency-Key', () => {
    it('answers the first deposit byte for byte and starts no second one; other fields with the key are refused', async () => {
      const headers = { 'Idempotency-Key': 'deposit-retry-1' };
      const fields = { token: localCard, amount: 2, currency: 'USD' };
      const before = await platform.deps.database('deposits').count('* as n').first();
      const first = await merchant.action('deposit_by_local_card', fields, { headers });
      const retried = await merchant.action('deposit_by_local_card', fields, { headers });
      expect(first.status).toBe(200);
      expect(retried.text).toBe(first.text);
      const after = await platform.deps.database('deposits').count('* as n').first();
      expect(BigInt(after!.n as string | number | bigint) - BigInt(before!.n as string | number | bigint)).toBe(1n);

      const reused = await merchant.action('deposit_by_local_card', { ...fields, amount: 3 }, { headers });
      expect(reused.status).toBe(409);
      expect(reused.body).toMatchObject({ success: false, code: 409, error: { 'Idempotency-Key': [expect.any(String)] } });

      // The one deposit still confirms, and credits once.
      const balance = await userBalance(platform, payer.id);
      const confirmed = await merchant.action('confirm_payments', { token: first.body.data.token, user_id: payer.id, password: OTP });
      expect(confirmed.status).toBe(200);
      expect(await userBalance(platform, payer.id)).toBe(balance + 200n);
    });

    it('answers a replayed signed request_id with the first Visa/Master deposit even though the CVV is encrypted anew', async () => {
      const first = await merchant.action('deposit_by_visa_master', { token: visaCard, amount: 1, currency: 'USD', security_code: encryptedSecurityCode(platform), request_id: 'DEP-REQ-1' });
      const again = await merchant.action('deposit_by_visa_master', { token: visaCard, amount: 1, currency: 'USD', security_code: encryptedSecurityCode(platform), request_id: 'DEP-REQ-1' });
      expect(first.status).toBe(200);
      expect(again.text).toBe(first.text);
    });
  });

  describe('deposit_by_bank_account with a preorder', () => {
    it('refuses an account not activated yet, then pays the preorder to its seller less commission, once', async () => {
      const account = await tokenizeBankAccount(platform, merchant, payer.id);
      const preorder = await newPreorder(merchant, { seller_code: seller.wallet_ref, amount: 20, commission_rate: 2.5 });
      const fields = { token: account, pre_order_token: preorder.pre_order_token, amount: 20, currency: 'USD', user_id: payer.id };
      const early = await merchant.action('deposit_by_bank_account', fields);
      expect(early.body).toEqual({ ...BAD_REQUEST, error: { token: ['The bank account is not activated yet.'] } });

      await activateBankAccount(platform, account);
      const [payerBefore, sellerBefore, revenueBefore, settlementBefore] = [
        await userBalance(platform, payer.id),
        await userBalance(platform, seller.id),
        await platformBalance(platform, 'fee_revenue'),
        await platformBalance(platform, 'settlement'),
      ];
      const started = await merchant.action('deposit_by_bank_account', fields);
      expect(started.status).toBe(200);
      expect(started.body.data).toMatchObject({ token_type: 1, need_verify_trx: true, html_confirm_payment: '' });
      const confirmed = await merchant.action('confirm_payments', { user_id: payer.id, token: started.body.data.token, password: OTP });
      expect(confirmed.status).toBe(200);

      expect(await userBalance(platform, payer.id)).toBe(payerBefore); // the payer's wallet is not involved
      expect(await userBalance(platform, seller.id)).toBe(sellerBefore + 1950n);
      expect(await platformBalance(platform, 'fee_revenue')).toBe(revenueBefore + 50n);
      expect(await platformBalance(platform, 'settlement')).toBe(settlementBefore - 2000n);
      const row = await platform.deps.database('preorders').where({ token: preorder.pre_order_token }).first();
      expect(row).toMatchObject({ status: 'paid', payment_reference: started.body.data.reference });

      // Paid once: neither another deposit nor pay_by_token may pay it again.
      const again = await merchant.action('deposit_by_bank_account', fields);
      expect(again.body).toEqual({ ...BAD_REQUEST, error: { pre_order_token: [DEPOSIT_MESSAGES.preorderPaid] } });
      const byToken = await merchant.action('pay_by_token', { pre_order_token: preorder.pre_order_token, user_id: payer.id });
      expect(byToken.body).toEqual({ ...BAD_REQUEST, error: { pre_order_token: ['The preorder has already been paid.'] } });
    });
  });

  describe('a preorder is paid exactly once across deposits and pay_by_token', () => {
    it('a deposit whose preorder was paid meanwhile fails at confirmation and moves nothing', async () => {
      const preorder = await newPreorder(merchant, { seller_code: seller.wallet_ref, amount: 5 });
      const fields = { token: localCard, pre_order_token: preorder.pre_order_token, amount: 5, currency: 'USD' };
      const first = await merchant.action('deposit_by_local_card', fields);
      const second = await merchant.action('deposit_by_local_card', fields);
      expect([first.status, second.status]).toEqual([200, 200]);
      const sellerBefore = await userBalance(platform, seller.id);

      expect((await merchant.action('confirm_payments', { user_id: payer.id, token: first.body.data.token, password: OTP })).status).toBe(200);
      const late = await merchant.action('confirm_payments', { user_id: payer.id, token: second.body.data.token, password: OTP });
      expect(late.body).toEqual({ ...BAD_REQUEST, error: { pre_order_token: [DEPOSIT_MESSAGES.preorderPaid] } });
      expect(await depositState(platform, second.body.data.reference)).toBe('failed');
      const afterFailure = await merchant.action('confirm_payments', { user_id: payer.id, token: second.body.data.token, password: OTP });
      expect(afterFailure.body.error).toEqual({ token: [DEPOSIT_MESSAGES.failed] });
      expect(await userBalance(platform, seller.id)).toBe(sellerBefore + 500n);
    });

    it('reverses the card authorization of a Visa/Master deposit whose preorder was paid meanwhile, and captures a completed one', async () => {
      const sandbox = platform.deps.acquirer as unknown as SandboxSettlements;
      const funded = await newUser(merchant, 'Funder');
      await fundUser(platform, funded.id, 1_000n);
      const preorder = await newPreorder(merchant, { seller_code: seller.wallet_ref, amount: 3 });
      const byCard = await merchant.action('deposit_by_visa_master', {
        token: visaCard, pre_order_token: preorder.pre_order_token, amount: 3, currency: 'USD', security_code: encryptedSecurityCode(platform),
      });
      expect(byCard.status).toBe(200);
      expect((await merchant.action('pay_by_token', { pre_order_token: preorder.pre_order_token, user_id: funded.id })).status).toBe(200);
      const answer = await submitConfirmation(platform, byCard.body.data.html_confirm_payment);
      expect(decodeResult(hiddenResult(await answer.text())!).success).toBe(false);
      expect(await depositState(platform, byCard.body.data.reference)).toBe('failed');
      const reversed = sandbox.settlements.filter((entry) => entry.action === 'reverse');
      expect(reversed).toHaveLength(1);

      const completed = await merchant.action('deposit_by_visa_master', { token: visaCard, amount: 1, currency: 'USD', security_code: encryptedSecurityCode(platform) });
      await (await submitConfirmation(platform, completed.body.data.html_confirm_payment)).arrayBuffer();
      expect(await depositState(platform, completed.body.data.reference)).toBe('completed');
      expect(sandbox.settlements.filter((entry) => entry.action === 'reverse')).toHaveLength(1);
      expect(sandbox.settlements.at(-1)).toMatchObject({ action: 'capture' });
      expect(sandbox.settlements.at(-1)!.authorization_id).not.toBe(reversed[0]!.authorization_id);
    });

    it('a deposit started before pay_by_token paid the preorder fails', async () => {
      const funded = await newUser(merchant, 'Funded');
      const card = await tokenizeLocalCard(platform, merchant, funded.id);
      const top = await merchant.action('deposit_by_local_card', { token: card, amount: 10, currency: 'USD' });
      await merchant.action('confirm_payments', { user_id: funded.id, token: top.body.data.token, password: OTP });
      const preorder = await newPreorder(merchant, { seller_code: seller.wallet_ref, amount: 4 });
      const pending = await merchant.action('deposit_by_local_card', { token: card, pre_order_token: preorder.pre_order_token, amount: 4, currency: 'USD' });
      const paid = await merchant.action('pay_by_token', { pre_order_token: preorder.pre_order_token, user_id: funded.id });
      expect(paid.status).toBe(200);
      const late = await merchant.action('confirm_payments', { user_id: funded.id, token: pending.body.data.token, password: OTP });
      expect(late.body.error).toEqual({ pre_order_token: [DEPOSIT_MESSAGES.preorderPaid] });
      expect(await userBalance(platform, funded.id)).toBe(600n);
    });
  });

  describe('deposit_by_visa_master (html_confirm_payment)', () => {
    it('approves 4242…: the form posts to the platform and answers the hidden input result; twice → same result, money once', async () => {
      const before = await userBalance(platform, payer.id);
      const started = await merchant.action('deposit_by_visa_master', {
        token: visaCard, amount: 7.25, currency: 'USD', security_code: encryptedSecurityCode(platform),
      });
      expect(started.status).toBe(200);
      expect(started.body.data).toMatchObject({ token_type: 2, need_verify_trx: false });
      const html: string = started.body.data.html_confirm_payment;
      expect(html).toMatch(/^<!DOCTYPE html>/);
      expect(formAction(html)).toBe(`${platform.config.PUBLIC_BASE_URL}/visa-master/confirm/${started.body.data.token}`);
      expect(html).toContain('7.25 USD');
      expect(html).toContain('•••• 4242');
      expect(html).not.toContain(SANDBOX_CARDS.approved);

      const shown = await fetch(local(platform, formAction(html)!));
      expect(formAction(await shown.text())).toBe(formAction(html)); // the same confirmation page while pending

      const answer = await submitConfirmation(platform, html);
      expect(answer.status).toBe(200);
      const page = await answer.text();
      const result = decodeResult(hiddenResult(page)!);
      expect(result).toEqual({ success: true, code: 200, message: 'OK', data: { transaction_ref: started.body.data.reference } });
      expect(await userBalance(platform, payer.id)).toBe(before + 725n);

      const again = await submitConfirmation(platform, html);
      expect(decodeResult(hiddenResult(await again.text())!)).toEqual(result);
      const shownAfter = await (await fetch(local(platform, formAction(html)!))).text();
      expect(decodeResult(hiddenResult(shownAfter)!)).toEqual(result);
      expect(await userBalance(platform, payer.id)).toBe(before + 725n);

      const byOtp = await merchant.action('confirm_payments', { user_id: payer.id, token: started.body.data.token, password: OTP });
      expect(byOtp.body).toEqual({ ...BAD_REQUEST, error: { token: [DEPOSIT_MESSAGES.confirmByForm] } });
    });

    it('with a preorder redirect_url: declined → 303 with success false; approved → 303 with success true, seller paid', async () => {
      const redirect = 'https://shop.example/return?order=42';
      const preorder = await newPreorder(merchant, { seller_code: seller.wallet_ref, amount: 10, commission_rate: 1, redirect_url: redirect });
      const sellerBefore = await userBalance(platform, seller.id);
      const fields = { pre_order_token: preorder.pre_order_token, amount: 10, currency: 'USD', security_code: encryptedSecurityCode(platform, '4321') };

      const declined = await merchant.action('deposit_by_visa_master', { ...fields, token: declinedCard });
      const refused = await submitConfirmation(platform, declined.body.data.html_confirm_payment);
      expect(refused.status).toBe(303);
      const refusedTarget = new URL(refused.headers.get('location')!);
      expect(`${refusedTarget.origin}${refusedTarget.pathname}`).toBe('https://shop.example/return');
      expect(refusedTarget.searchParams.get('order')).toBe('42');
      expect(decodeResult(refusedTarget.searchParams.get('result')!)).toEqual({
        success: false, code: 400, message: 'The card was declined.', data: { transaction_ref: declined.body.data.reference },
      });
      expect(await depositState(platform, declined.body.data.reference)).toBe('declined');
      expect(await userBalance(platform, seller.id)).toBe(sellerBefore);

      const approved = await merchant.action('deposit_by_visa_master', { ...fields, token: visaCard });
      const accepted = await submitConfirmation(platform, approved.body.data.html_confirm_payment);
      expect(accepted.status).toBe(303);
      const target = new URL(accepted.headers.get('location')!);
      expect(decodeResult(target.searchParams.get('result')!)).toEqual({
        success: true, code: 200, message: 'OK', data: { transaction_ref: approved.body.data.reference },
      });
      expect(await userBalance(platform, seller.id)).toBe(sellerBefore + 990n);
    });

    it('refuses a wrong security code, one that cannot be decrypted, and an expired card', async () => {
      const short = await merchant.action('deposit_by_visa_master', {
        token: visaCard, amount: 1, currency: 'USD', security_code: encryptedSecurityCode(platform, '12'),
      });
      // No padding oracle: a CVV that decrypts to a wrong value answers exactly as one that does not decrypt.
      const garbage = await merchant.action('deposit_by_visa_master', { token: visaCard, amount: 1, currency: 'USD', security_code: 'bm90IGVuY3J5cHRlZA==' });
      expect(garbage.body).toEqual({ ...BAD_REQUEST, error: { security_code: ['The security_code could not be decrypted.'] } });
      expect(short.text).toBe(garbage.text);

      const user = await platform.deps.database('users').where({ id: payer.id }).first('merchant_id');
      const expired = await insertInstrument(platform.deps, {
        merchantId: user.merchant_id, userId: String(payer.id), kind: 'visa_master', holderName: 'SOK DARA',
        number: SANDBOX_CARDS.approved, brand: 'visa', expiry: { month: 1, year: 2020 },
      });
      const old = await merchant.action('deposit_by_visa_master', {
        token: expired.token, amount: 1, currency: 'USD', security_code: encryptedSecurityCode(platform),
      });
      expect(old.body).toEqual({ ...BAD_REQUEST, error: { token: [DEPOSIT_MESSAGES.cardExpired] } });
    });

    it('answers 404 HTML for an unknown confirmation token and for an OTP deposit token', async () => {
      const unknown = await fetch(`${platform.facadeUrl}/visa-master/confirm/dtk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`, { method: 'POST' });
      expect(unknown.status).toBe(404);
      expect(unknown.headers.get('content-type')).toContain('text/html');
      const otp = await merchant.action('deposit_by_local_card', { token: localCard, amount: 1, currency: 'USD' });
      const wrongKind = await fetch(`${platform.facadeUrl}/visa-master/confirm/${otp.body.data.token}`, { method: 'POST' });
      expect(wrongKind.status).toBe(404);
    });
  });

  describe('bad input and tenancy', () => {
    it('lists every missing field', async () => {
      const response = await merchant.action('deposit_by_local_card', {});
      expect(response.body).toEqual({
        ...BAD_REQUEST,
        error: { currency: [MESSAGES.required('currency')], token: [MESSAGES.required('token')], amount: [MESSAGES.required('amount')] },
      });
      const visa = await merchant.action('deposit_by_visa_master', { token: visaCard, amount: 1, currency: 'USD' });
      expect(visa.body.error).toEqual({ security_code: [MESSAGES.required('security_code')] });
    });

    it('refuses an instrument of another user, of another merchant, of another kind, and unknown', async () => {
      const base = { amount: 1, currency: 'USD' };
      const invalid = { ...BAD_REQUEST, error: { token: [DEPOSIT_MESSAGES.tokenInvalid] } };
      expect((await merchant.action('deposit_by_local_card', { ...base, token: localCard, user_id: seller.id })).body).toEqual(invalid);
      expect((await other.action('deposit_by_local_card', { ...base, token: localCard })).body).toEqual(invalid);
      expect((await merchant.action('deposit_by_bank_account', { ...base, token: localCard })).body).toEqual(invalid);
      expect((await merchant.action('deposit_by_local_card', { ...base, token: 'tok_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' })).body).toEqual(invalid);
      const visa = await other.action('deposit_by_visa_master', { ...base, token: visaCard, security_code: encryptedSecurityCode(platform) });
      expect(visa.body).toEqual(invalid);
    });

    it("refuses a deposit in a currency the card's wallet does not hold, before anything is authorized or stored", async () => {
      // Area C's users hold USD, but an operator may open a merchant's user in another currency
      // (`payments admin user create --currency KHR --merchant-id …`); a USD deposit could never be posted to it.
      const khr = await createUser(platform.deps, { first_name: 'Riel', last_name: 'Holder', phone_number: '+85597' + String(Date.now()).slice(-7), currency: 'KHR', merchant_id: merchant.options.merchantId });
      const card = await tokenizeLocalCard(platform, merchant, Number(khr.id));
      const response = await merchant.action('deposit_by_local_card', { token: card, amount: 1, currency: 'USD' });
      expect(response.body).toEqual({ ...BAD_REQUEST, error: { currency: ["The user's wallet does not hold USD."] } });
      expect(await platform.deps.database('deposits').where({ instrument_token: card }).count('* as count')).toEqual([{ count: 0n }]);
    });

    it("refuses another merchant's preorder, an unknown one, and an amount that differs from the preorder", async () => {
      const foreignSeller = await newUser(other, 'Foreign');
      const foreign = await newPreorder(other, { seller_code: foreignSeller.wallet_ref, amount: 2 });
      const mine = await newPreorder(merchant, { seller_code: seller.wallet_ref, amount: 2 });
      const base = { token: localCard, amount: 2, currency: 'USD' };
      expect((await merchant.action('deposit_by_local_card', { ...base, pre_order_token: foreign.pre_order_token })).body.error).toEqual({
        pre_order_token: [DEPOSIT_MESSAGES.preorderInvalid],
      });
      expect((await merchant.action('deposit_by_local_card', { ...base, pre_order_token: 'PO-unknown' })).body.error).toEqual({
        pre_order_token: [DEPOSIT_MESSAGES.preorderInvalid],
      });
      const mismatch = await merchant.action('deposit_by_local_card', { ...base, amount: 3, pre_order_token: mine.pre_order_token });
      expect(mismatch.body.error).toEqual({ amount: [DEPOSIT_MESSAGES.amountMismatch] });
      const both = await merchant.action('deposit_by_local_card', { ...base, token: 'tok_nope', pre_order_token: 'PO-unknown' });
      expect(both.body.error).toEqual({ token: [DEPOSIT_MESSAGES.tokenInvalid], pre_order_token: [DEPOSIT_MESSAGES.preorderInvalid] });
      expect(await platform.deps.database('deposits').where({ pre_order_token: mine.pre_order_token }).count('* as count')).toEqual([{ count: 0n }]);
    });
  });

  describe('hosted preorder page over HTTP', () => {
    it('shows seller, description (escaped) and amount; refuses a bad card; a paid preorder has no form; unknown → 404', async () => {
      const preorder = await newPreorder(merchant, { seller_code: seller.wallet_ref, amount: 3.5, description: '<script>alert(1)</script> & tea' });
      const url = local(platform, preorder.pre_order_url);
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
      const html = await page.text();
      expect(html).toContain('Seller Dara');
      expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt; &amp; tea');
      expect(html).not.toContain('<script>');
      expect(html).toContain('3.50 USD');

      const form = (fields: Record<string, string>) =>
        fetch(`${url}/pay`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
      const card = { holder_name: 'Guest Payer', card_number: '4242 4242 4242 4242', expiry_month: '12', expiry_year: '39', security_code: '123' };
      const invalidNumber = await form({ ...card, card_number: '4242424242424241' });
      expect(invalidNumber.status).toBe(400);
      expect(await invalidNumber.text()).toContain('The card number is invalid.');
      const pastExpiry = await form({ ...card, expiry_year: '20' });
      expect(pastExpiry.status).toBe(400);
      expect(await pastExpiry.text()).toContain('The card has expired.');
      expect(await platform.deps.database('deposits').where({ pre_order_token: preorder.pre_order_token }).count('* as count')).toEqual([{ count: 0n }]);

      const confirmation = await form(card);
      expect(confirmation.status).toBe(200);
      const result = await submitConfirmation(platform, await confirmation.text());
      expect(decodeResult(hiddenResult(await result.text())!).success).toBe(true);
      const paidPage = await fetch(url);
      expect(paidPage.status).toBe(200);
      const paid = await paidPage.text();
      expect(paid).toContain('This order has already been paid.');
      expect(paid).not.toContain('<form');
      expect((await form(card)).status).toBe(409);
      expect((await fetch(`${platform.facadeUrl}/pre-order/PO-unknown`)).status).toBe(404);
    });
  });
});

describe('Area C deposits after their lifetime', () => {
  let platform: TestPlatform;
  let merchant: MerchantClient;
  let payer: { id: number; wallet_ref: string };

  beforeAll(async () => {
    platform = await startTestPlatform({ env: { DEPOSIT_TTL_SECONDS: '2' } });
    merchant = await loggedInMerchant(platform, 'Slow Shop');
    payer = await newUser(merchant);
  });
  afterAll(() => platform.stop());

  async function waitForState(reference: string, state: string): Promise<void> {
    const deadline = Date.now() + 20_000;
    while ((await depositState(platform, reference)) !== state) {
      if (Date.now() > deadline) throw new Error(`deposit ${reference} never became ${state}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  it('expires an unconfirmed deposit: the OTP and the card form are refused afterwards, nothing moves', async () => {
    const card = await tokenizeLocalCard(platform, merchant, payer.id);
    const visa = await tokenizeVisaMaster(platform, merchant, payer.id);
    const otp = await merchant.action('deposit_by_local_card', { token: card, amount: 1, currency: 'USD' });
    const form = await merchant.action('deposit_by_visa_master', { token: visa, amount: 1, currency: 'USD', security_code: encryptedSecurityCode(platform) });
    await waitForState(otp.body.data.reference, 'expired');
    await waitForState(form.body.data.reference, 'expired');

    const late = await merchant.action('confirm_payments', { user_id: payer.id, token: otp.body.data.token, password: OTP });
    expect(late.body).toEqual({ ...BAD_REQUEST, error: { token: [DEPOSIT_MESSAGES.expired] } });
    const submitted = await submitConfirmation(platform, form.body.data.html_confirm_payment);
    expect(decodeResult(hiddenResult(await submitted.text())!)).toEqual({
      success: false, code: 400, message: DEPOSIT_MESSAGES.expired, data: { transaction_ref: form.body.data.reference },
    });
    expect(await userBalance(platform, payer.id)).toBe(0n);
  });
});
