/**
 * Tokenizing instruments in tests, through the real façade: each helper encrypts the fields with the
 * platform public key (default padding OAEP SHA-256), calls the /do-action service and expects 200.
 *
 *   const token = await tokenizeVisaMaster(merchant, platform, userId);                // 4242… approves
 *   const token = await tokenizeLocalCard(merchant, platform, userId);                 // OTP deposits
 *   const { token } = await tokenizeBankAccount(merchant, platform, userId);           // pending_activation
 *   await activateBankAccount(platform, token);                                        // now usable
 */
import { activationCode } from '../../src/instruments/activation';
import type { MerchantClient } from './merchant-client';
import { encryptField, sourceOfFundsJson, type FieldPadding } from './field-encryption';
import type { TestPlatform } from './platform';

export const TEST_CARDS = {
  approved: '4242424242424242',
  declined: '4000000000000002',
  localCard: '6200000000000005',
} as const;

function expectOk(response: { status: number; text: string }, service: string): void {
  if (response.status !== 200) throw new Error(`${service} answered ${response.status}: ${response.text}`);
}

export async function tokenizeVisaMaster(
  client: MerchantClient,
  platform: TestPlatform,
  userId: number | string,
  card: { number?: string; securityCode?: string; month?: string; year?: string; holderName?: string; padding?: FieldPadding } = {},
): Promise<string> {
  const key = platform.deps.keys.fieldEncryption.publicKeyPem;
  const response = await client.action('tokenize_visa_master', {
    user_id: Number(userId),
    holder_name: encryptField(key, card.holderName ?? 'SOK DARA', card.padding),
    sourceOfFunds: encryptField(key, sourceOfFundsJson({ ...card, number: card.number ?? TEST_CARDS.approved }), card.padding),
  });
  expectOk(response, 'tokenize_visa_master');
  return response.body.data.token as string;
}

export async function tokenizeLocalCard(
  client: MerchantClient,
  platform: TestPlatform,
  userId: number | string,
  card: { number?: string; bankId?: number; holderName?: string; padding?: FieldPadding } = {},
): Promise<string> {
  const key = platform.deps.keys.fieldEncryption.publicKeyPem;
  const response = await client.action('tokenize_local_card', {
    user_id: Number(userId),
    holder_name: encryptField(key, card.holderName ?? 'SOK DARA', card.padding),
    bank_id: String(card.bankId ?? 1),
    bank_code: encryptField(key, card.number ?? TEST_CARDS.localCard, card.padding),
  });
  expectOk(response, 'tokenize_local_card');
  return response.body.data.token as string;
}

export async function tokenizeBankAccount(
  client: MerchantClient,
  platform: TestPlatform,
  userId: number | string,
  account: { number?: string; bankId?: number; holderName?: string; callBack?: string; padding?: FieldPadding } = {},
): Promise<{ token: string; bank_number: string; qr_image: string; need_verify: boolean }> {
  const key = platform.deps.keys.fieldEncryption.publicKeyPem;
  const response = await client.action('tokenize_bank_account', {
    user_id: Number(userId),
    holder_name: encryptField(key, account.holderName ?? 'SOK DARA', account.padding),
    bank_id: account.bankId ?? 1,
    bank_number: encryptField(key, account.number ?? '000123456789', account.padding),
    call_back: account.callBack ?? 'https://merchant.example/bank-account-activated',
  });
  expectOk(response, 'tokenize_bank_account');
  return response.body.data;
}

/** The façade URL of a bank account's activation page (what its QR code encodes, rebased onto the test façade). */
export function activationPageUrl(platform: TestPlatform, token: string): string {
  return `${platform.facadeUrl}${platform.config.MERCHANT_PREFIX}/instruments/bank-accounts/activate/${activationCode(platform.deps.keys.dataKey, token)}`;
}

/** Presses "Activate account" on the bank account's activation page (HTTP POST through the façade). */
export async function activateBankAccount(platform: TestPlatform, token: string): Promise<void> {
  const response = await fetch(activationPageUrl(platform, token), { method: 'POST' });
  if (response.status !== 200) throw new Error(`activation answered ${response.status}`);
}
