/**
 * Demo data for `npm start` (platform decisions §1): a partner, a merchant and two users with USD
 * balances, created once through the same onboarding functions as the AdminService, their credentials written to
 * `<DATA_DIR>/demo-credentials.json` (mode 0600). Remembered in platform_settings under `demo_data`, so a restart
 * creates nothing new (the credentials cannot be shown again: only hashes are stored).
 */
import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { formatAmount } from '../money';
import type { PlatformDeps } from '../platform-deps';
import { createMerchant } from './merchants';
import { createPartner } from './partners';
import { createUser } from './users';

export const DEMO_SETTING_KEY = 'demo_data';
export const DEMO_CREDENTIALS_FILE = 'demo-credentials.json';

/** Demo amounts in USD minor units. */
const DEMO_PARTNER_FLOAT_UNITS = 1_000_000n; // 10,000.00
const DEMO_USER_BALANCE_UNITS = 50_000n; // 500.00

/**
 * Creates the demo records unless `platform_settings.demo_data` says they exist.
 * @returns the credentials file path and whether it was written now.
 */
export async function ensureDemoData(deps: PlatformDeps, dataDirectory = deps.config.DATA_DIR): Promise<{ path: string; created: boolean }> {
  const file = path.resolve(dataDirectory, DEMO_CREDENTIALS_FILE);
  const existing = await deps.database('platform_settings').where({ key: DEMO_SETTING_KEY }).first();
  if (existing) return { path: (existing.value as { path?: string }).path ?? file, created: false };

  const partnerPair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const partner = await createPartner(deps, {
    name: 'Demo Partner',
    public_key_pem: partnerPair.publicKey.export({ type: 'spki', format: 'pem' }) as string,
    float_units: DEMO_PARTNER_FLOAT_UNITS,
  });
  const merchant = await createMerchant(deps, { name: 'Demo Merchant', callback_url: 'http://127.0.0.1:3999/webhooks/payments' });
  const users = [];
  for (const [index, person] of [
    { phone_number: '012000001', first_name: 'Sokha', last_name: 'Chan', email: 'sokha.demo@example.com' },
    { phone_number: '012000002', first_name: 'Dara', last_name: 'Keo', email: 'dara.demo@example.com' },
  ].entries()) {
    const user = await createUser(deps, { ...person, currency: 'USD', merchant_id: merchant.merchant.id, address: 'Phnom Penh' });
    await deps.ledger.transfer({
      idempotency_key: `demo:user:${user.id}:opening-balance`,
      description: 'demo opening balance',
      postings: [
        { platform: 'settlement', currency: 'USD', amount_units: -DEMO_USER_BALANCE_UNITS },
        { account_id: user.wallet_account_id, amount_units: DEMO_USER_BALANCE_UNITS },
      ],
      metadata: { source: 'demo', user_index: index },
    });
    users.push({
      user_id: user.id,
      phone_number: user.phone_number,
      email: user.email,
      full_name: user.full_name,
      user_token: user.user_token,
      wallet_ref: user.wallet_ref,
      currency: user.currency,
      balance: formatAmount(DEMO_USER_BALANCE_UNITS, 'USD'),
    });
  }
  const document = {
    note: 'Demo credentials created by npm start. Secrets are shown only here; the database stores hashes.',
    platform_public_key: deps.keys.publicKeyPem,
    field_encryption_public_key: deps.keys.fieldEncryption.publicKeyPem,
    partner: {
      ...partner.credentials,
      private_key: partnerPair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
      float: formatAmount(DEMO_PARTNER_FLOAT_UNITS, 'USD'),
      currency: 'USD',
    },
    merchant: { ...merchant.credentials, callback_url: merchant.merchant.callback_url },
    users,
  };
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(document, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  await deps.database('platform_settings')
    .insert({
      key: DEMO_SETTING_KEY,
      value: JSON.stringify({ path: file, partner_id: partner.partner.id, merchant_id: merchant.merchant.id, user_ids: users.map((u) => u.user_id) }),
    })
    .onConflict('key')
    .ignore();
  return { path: file, created: true };
}
