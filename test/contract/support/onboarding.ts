/**
 * Registration "beforehand" (interface "Authentication"), done as an operator does it: `payments admin … --json`
 * (platform decisions §2), whose printed JSON is what the partner or merchant receives. The contract tests use the
 * credentials exactly as printed: a merchant encrypts with the `platform_public_key` it was given, a partner verifies
 * with it.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runAdminCli } from '../../support/admin-cli';
import type { TestPlatform } from '../../support/platform';
import type { MerchantCredentials, PartnerCredentials } from './clients';

/** Runs one admin command; its one JSON object, or the test fails with the CLI's stderr. */
export async function admin(platform: TestPlatform, args: string[]): Promise<Record<string, string>> {
  const result = await runAdminCli(platform, [...args, '--json']);
  if (result.code !== 0 || !result.json) throw new Error(`payments admin ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
  return result.json as Record<string, string>;
}

/** `partner create` with a fresh RSA-2048 key pair of the partner's; its float in USD (decimal text). */
export async function registerPartner(platform: TestPlatform, float: string): Promise<PartnerCredentials> {
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const directory = mkdtempSync(path.join(tmpdir(), 'contract-partner-'));
  const publicKeyFile = path.join(directory, 'partner-public.pem');
  writeFileSync(publicKeyFile, pair.publicKey.export({ type: 'spki', format: 'pem' }) as string);
  try {
    const printed = await admin(platform, ['partner', 'create', '--name', `Partner ${randomBytes(3).toString('hex')}`, '--public-key', publicKeyFile, '--float', float]);
    return {
      partner_id: printed.partner_id!,
      partner_secret_key: printed.partner_secret_key!,
      user_name: printed.user_name!,
      password: printed.password!,
      platform_public_key: printed.platform_public_key!,
      private_key: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** `merchant create` without `--public-key`: the platform generates the merchant's RSA2 pair (private_key printed). */
export async function registerMerchant(platform: TestPlatform, callbackUrl = 'https://merchant.example/webhooks'): Promise<MerchantCredentials> {
  const printed = await admin(platform, ['merchant', 'create', '--name', `Merchant ${randomBytes(3).toString('hex')}`, '--callback-url', callbackUrl]);
  for (const field of ['merchant_id', 'merchant_secret_key', 'api_user_name', 'api_password', 'api_key', 'hmac_secret', 'signature_header', 'platform_public_key', 'private_key']) {
    if (typeof printed[field] !== 'string' || printed[field] === '') throw new Error(`merchant create printed no ${field}`);
  }
  return printed as unknown as MerchantCredentials;
}

/**
 * `payments admin ledger check` after a file (platform decisions §2): every currency sums to zero, no wallet below
 * zero. (The test platform's stop checks the same invariants through the ledger itself.)
 */
export async function expectLedgerBalanced(platform: TestPlatform): Promise<void> {
  const check = await admin(platform, ['ledger', 'check']);
  expect(check).toMatchObject({ ok: true, imbalances: [] });
}
