/**
 * What deposit tests need: a logged-in merchant client, users, instruments tokenized through the façade
 * (encrypted fields under the platform public key), bank-account activation through its public URL, preorders,
 * and balance readers over the ledger.
 */
import { activationCode, activationUrl } from '../../src/instruments/activation';
import { getUser } from '../../src/onboarding';
import { encryptField, sourceOfFundsJson } from './field-encryption';
import { MerchantClient, onboardMerchantClient } from './merchant-client';
import type { TestPlatform } from './platform';

export const SANDBOX_CARDS = { approved: '4242424242424242', declined: '4000000000000002', local: '6200000000000005' } as const;

export async function loggedInMerchant(platform: TestPlatform, name: string): Promise<MerchantClient> {
  const { client } = await onboardMerchantClient(platform.deps, platform.facadeUrl, name);
  const login = await client.login();
  if (login.status !== 200) throw new Error(`login failed: ${login.text}`);
  return client;
}

let phoneCounter = Math.floor(Math.random() * 500_000);
export async function newUser(client: MerchantClient, firstName = 'Sok'): Promise<{ id: number; wallet_ref: string; full_name: string }> {
  phoneCounter += 1;
  const response = await client.action('create_user', {
    phone_number: `097${String(1_000_000 + phoneCounter).slice(-7)}`,
    first_name: firstName,
    last_name: 'Dara',
    address: 'Phnom Penh',
    currency: 'USD',
  });
  if (response.status !== 200) throw new Error(`create_user failed: ${response.text}`);
  return response.body.data;
}

function encrypt(platform: TestPlatform, plaintext: string): string {
  return encryptField(platform.deps.keys.fieldEncryption.publicKeyPem, plaintext);
}

/** tokenize_local_card → instrument token. */
export async function tokenizeLocalCard(platform: TestPlatform, client: MerchantClient, userId: number, number: string = SANDBOX_CARDS.local) {
  const response = await client.action('tokenize_local_card', {
    user_id: userId,
    holder_name: encrypt(platform, 'SOK DARA'),
    bank_id: 1,
    bank_code: encrypt(platform, number),
  });
  if (response.status !== 200) throw new Error(`tokenize_local_card failed: ${response.text}`);
  return response.body.data.token as string;
}

/** tokenize_bank_account → instrument token (pending activation). */
export async function tokenizeBankAccount(platform: TestPlatform, client: MerchantClient, userId: number) {
  const response = await client.action('tokenize_bank_account', {
    user_id: userId,
    holder_name: encrypt(platform, 'SOK DARA'),
    bank_id: 2,
    bank_number: encrypt(platform, '001234567890'),
    call_back: 'http://127.0.0.1:9/never',
  });
  if (response.status !== 200) throw new Error(`tokenize_bank_account failed: ${response.text}`);
  return response.body.data.token as string;
}

/** Activates a bank account as the account holder does: POST to the activation URL its QR code encodes. */
export async function activateBankAccount(platform: TestPlatform, token: string): Promise<void> {
  const url = activationUrl(platform.deps, activationCode(platform.deps.keys.dataKey, token));
  const response = await fetch(url.replace(platform.config.PUBLIC_BASE_URL, platform.facadeUrl), { method: 'POST' });
  if (response.status !== 200) throw new Error(`activation failed: ${response.status}`);
}

/** tokenize_visa_master → instrument token. */
export async function tokenizeVisaMaster(platform: TestPlatform, client: MerchantClient, userId: number, number: string = SANDBOX_CARDS.approved) {
  const response = await client.action('tokenize_visa_master', {
    user_id: userId,
    holder_name: encrypt(platform, 'SOK DARA'),
    sourceOfFunds: encrypt(platform, sourceOfFundsJson({ number })),
  });
  if (response.status !== 200) throw new Error(`tokenize_visa_master failed: ${response.text}`);
  return response.body.data.token as string;
}

export function encryptedSecurityCode(platform: TestPlatform, code = '123'): string {
  return encrypt(platform, code);
}

let tradeCounter = 0;
/** generate_pre_order_token → { pre_order_token, pre_order_url }. */
export async function newPreorder(
  client: MerchantClient,
  fields: { seller_code: string; amount: number | string; description?: string; commission_rate?: number; redirect_url?: string; call_back_url?: string },
): Promise<{ pre_order_token: string; pre_order_url: string }> {
  tradeCounter += 1;
  const response = await client.action('generate_pre_order_token', {
    out_trade_no: `ORDER-${Date.now()}-${tradeCounter}`,
    description: 'Two coffees',
    currency: 'USD',
    ...fields,
  });
  if (response.status !== 200) throw new Error(`generate_pre_order_token failed: ${response.text}`);
  return response.body.data;
}

/** Posted balance of a user's wallet, in minor units. */
export async function userBalance(platform: TestPlatform, userId: number | string): Promise<bigint> {
  const user = (await getUser(platform.deps.database, String(userId)))!;
  return (await platform.deps.ledger.getAccount(user.wallet_account_id)).posted_units;
}

/** Posted balance of a platform account (settlement, fee_revenue), in minor units. */
export async function platformBalance(platform: TestPlatform, kind: 'settlement' | 'fee_revenue'): Promise<bigint> {
  return (await platform.deps.ledger.platformAccount(kind, 'USD')).posted_units;
}

/** Decodes the `result` value (base64 of JSON) of a Visa/Master confirmation. */
export function decodeResult(base64: string): { success: boolean; code: number; message: string; data: { transaction_ref: string } } {
  return JSON.parse(Buffer.from(base64, 'base64').toString('utf8'));
}

/** The value of the hidden input `result` of a result page. */
export function hiddenResult(html: string): string | undefined {
  return /<input type="hidden" name="result" value="([^"]*)">/.exec(html)?.[1];
}

/** The form action of a confirmation page (html_confirm_payment). */
export function formAction(html: string): string | undefined {
  return /<form method="post" action="([^"]*)"/.exec(html)?.[1];
}
