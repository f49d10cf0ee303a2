/**
 * The `payments admin` CLI (platform decisions §2) as an operator runs it: `bin/payments admin ... --json` in a child
 * process against the test platform's RPC server (RPC_URL). Each command prints exactly one JSON object on stdout;
 * a failure exits non-zero with one line on stderr.
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { recordEvent } from '../../src/events';
import { authenticatePartner, createUser } from '../../src/onboarding';
import { startTestPlatform, type TestPlatform } from '../support/platform';

const BIN = path.resolve(__dirname, '../../bin/payments');

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The operator's credential every run presents (PAYMENTS_ADMIN_TOKEN), set once the platform is up. */
let operatorEnv: Record<string, string> = {};

function runCli(rpcUrl: string, args: string[], env: Record<string, string> = operatorEnv, command: string[] = ['admin']): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...command, ...args],
      { env: { ...process.env, RPC_URL: rpcUrl, LOG_LEVEL: 'silent', PAYMENTS_ADMIN_TOKEN: '', PAYMENTS_ADMIN_CREDENTIALS: '', ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Exactly one JSON object on stdout. */
function json(result: CliResult): Record<string, unknown> {
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  const text = result.stdout.trim();
  expect(text.split('\n')).toHaveLength(1);
  const parsed = JSON.parse(text) as unknown;
  expect(typeof parsed).toBe('object');
  return parsed as Record<string, unknown>;
}

describe('payments admin CLI', () => {
  let platform: TestPlatform;
  let directory: string;
  beforeAll(async () => {
    platform = await startTestPlatform({ roles: ['api'] });
    directory = mkdtempSync(path.join(tmpdir(), 'admin-cli-'));
    operatorEnv = { PAYMENTS_ADMIN_TOKEN: platform.adminToken };
  });
  afterAll(async () => {
    rmSync(directory, { recursive: true, force: true });
    await platform.stop();
  });

  // Each command is a fresh Node process (tsx): independent commands run side by side to keep the file short.
  it('creates a partner with a float, a merchant and a user, credits the user and checks the ledger', async () => {
    const keyFile = path.join(directory, 'partner.pem');
    writeFileSync(keyFile, generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }));
    const [partnerRun, merchantRun] = await Promise.all([
      runCli(platform.rpcUrl, ['partner', 'create', '--name', 'CLI Partner', '--public-key', keyFile, '--float', '250.00', '--json']),
      runCli(platform.rpcUrl, ['merchant', 'create', '--name', 'CLI Shop', '--callback-url', 'https://shop.example/hook', '--json']),
    ]);
    const partner = json(partnerRun);
    const merchant = json(merchantRun);
    expect(Object.keys(partner).sort()).toEqual(['field_encryption_public_key', 'partner_id', 'partner_secret_key', 'password', 'platform_public_key', 'user_name']);
    expect(partner.field_encryption_public_key).toBe(platform.deps.keys.fieldEncryption.publicKeyPem);
    expect(partner.field_encryption_public_key).not.toBe(partner.platform_public_key);
    expect(partner.platform_public_key).toBe(platform.deps.keys.publicKeyPem);
    await expect(
      authenticatePartner(platform.deps.database, {
        partner_id: partner.partner_id as string,
        partner_secret_key: partner.partner_secret_key as string,
        user_name: partner.user_name as string,
        password: partner.password as string,
      }),
    ).resolves.toMatchObject({ id: partner.partner_id });
    expect(Object.keys(merchant).sort()).toEqual(
      ['api_key', 'api_password', 'api_user_name', 'field_encryption_public_key', 'hmac_secret', 'merchant_id', 'merchant_secret_key', 'platform_public_key', 'private_key', 'signature_header'].sort(),
    );
    expect(merchant.signature_header).toBe('X-Signature');
    const merchantId = merchant.merchant_id as string;

    const [floatRun, suspendRun, userRun] = await Promise.all([
      runCli(platform.rpcUrl, ['wallet', 'balance', '--partner-id', partner.partner_id as string, '--json']),
      runCli(platform.rpcUrl, ['merchant', 'suspend', '--merchant-id', merchantId, '--json']),
      runCli(platform.rpcUrl, ['user', 'create', '--phone', '012 555 010', '--first-name', 'Cli', '--last-name', 'User', '--merchant-id', merchantId, '--json']),
    ]);
    expect(json(floatRun).wallets).toEqual([
      expect.objectContaining({ currency: 'USD', balance: '250.00', balance_units: 25000, decimals: 2, available_units: 25000 }),
    ]);
    expect(json(suspendRun)).toEqual({ merchant_id: merchantId, status: 'suspended' });
    const user = json(userRun);
    expect(user).toMatchObject({ phone_number: '+85512555010', currency: 'USD', eligible: true });
    expect(user.user_id).toMatch(/^\d+$/);
    expect(typeof user.user_token).toBe('string');
    expect(typeof user.wallet_ref).toBe('string');

    const [resumeRun, creditRun] = await Promise.all([
      runCli(platform.rpcUrl, ['merchant', 'resume', '--merchant-id', merchantId, '--json']),
      runCli(platform.rpcUrl, ['wallet', 'credit', '--user-id', user.user_id as string, '--amount', '12.5', '--currency', 'USD', '--reference', 'cli-ref-1', '--json']),
    ]);
    expect(json(resumeRun)).toEqual({ merchant_id: merchantId, status: 'active' });
    const credit = json(creditRun);
    expect(credit).toMatchObject({ balance: '12.50', currency: 'USD' });
    expect(typeof credit.transaction_ref).toBe('string');

    expect(json(await runCli(platform.rpcUrl, ['ledger', 'check', '--json']))).toMatchObject({ ok: true, imbalances: [] });
    expect(json(await runCli(platform.rpcUrl, ['reconcile', '--report-only', '--json']))).toMatchObject({ repaired: 0, reported: 0, findings: [] });
  }, 240_000);

  it('lists merchants newest first, a page at a time, and shows one with its wallets, never a secret', async () => {
    const [firstRun, secondRun] = [
      await runCli(platform.rpcUrl, ['merchant', 'create', '--name', 'Listed Shop A', '--callback-url', 'https://a.example/hook', '--json']),
      await runCli(platform.rpcUrl, ['merchant', 'create', '--name', 'Listed Shop B', '--callback-url', 'https://b.example/hook', '--payin-fee-percent', '2.5', '--json']),
    ];
    const first = json(firstRun);
    const second = json(secondRun);
    json(await runCli(platform.rpcUrl, ['merchant', 'suspend', '--merchant-id', first.merchant_id as string, '--json']));
    const secrets = [first, second].flatMap((created) => [created.api_key, created.api_password, created.hmac_secret, created.merchant_secret_key, created.private_key] as string[]);

    const [allRun, suspendedRun, pageRun, showRun, missingRun, badLimitRun, badStatusRun] = await Promise.all([
      runCli(platform.rpcUrl, ['merchant', 'list', '--limit', '500', '--json']),
      runCli(platform.rpcUrl, ['merchant', 'list', '--status', 'suspended', '--json']),
      runCli(platform.rpcUrl, ['merchant', 'list', '--limit', '1', '--before', second.merchant_id as string, '--json']),
      runCli(platform.rpcUrl, ['merchant', 'show', second.merchant_id as string, '--json']),
      runCli(platform.rpcUrl, ['merchant', 'show', 'MNOSUCHMERCHANT', '--json']),
      runCli(platform.rpcUrl, ['merchant', 'list', '--limit', '501', '--json']),
      runCli(platform.rpcUrl, ['merchant', 'list', '--status', 'closed', '--json']),
    ]);
    const all = json(allRun).merchants as Array<Record<string, unknown>>;
    const ids = all.map((merchant) => merchant.merchant_id);
    // Newest first: the second before the first, each once.
    expect(ids.indexOf(second.merchant_id)).toBeGreaterThanOrEqual(0);
    expect(ids.indexOf(second.merchant_id)).toBeLessThan(ids.indexOf(first.merchant_id));
    expect(new Set(ids).size).toBe(ids.length);
    const createdAts = all.map((merchant) => Date.parse(merchant.created_at as string));
    expect([...createdAts].sort((a, b) => b - a)).toEqual(createdAts);
    expect(all.find((merchant) => merchant.merchant_id === first.merchant_id)).toEqual({
      merchant_id: first.merchant_id,
      name: 'Listed Shop A',
      status: 'suspended',
      callback_url: 'https://a.example/hook',
      signature_header: 'X-Signature',
      payin_fee_percent: '1.0',
      api_user_name: first.api_user_name,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const suspended = (json(suspendedRun).merchants as Array<Record<string, unknown>>).map((merchant) => merchant.merchant_id);
    expect(suspended).toContain(first.merchant_id);
    expect(suspended).not.toContain(second.merchant_id);
    // The page after the second merchant starts with the one created just before it.
    expect((json(pageRun).merchants as Array<Record<string, unknown>>).map((merchant) => merchant.merchant_id)).toEqual([first.merchant_id]);

    const shown = json(showRun);
    expect(shown.merchant).toMatchObject({ merchant_id: second.merchant_id, name: 'Listed Shop B', status: 'active', payin_fee_percent: '2.5' });
    expect((shown.wallets as Array<Record<string, unknown>>).map((wallet) => [wallet.currency, wallet.balance_units])).toEqual([
      ['USD', 0],
      ['KHR', 0],
      ['USDT', 0],
    ]);
    for (const secret of secrets) {
      expect(typeof secret).toBe('string');
      expect(allRun.stdout + showRun.stdout).not.toContain(secret);
    }

    for (const [refused, says] of [
      [missingRun, 'MERCHANT_NOT_FOUND'],
      [badLimitRun, '--limit must be 1 to 500'],
      [badStatusRun, '--status must be active or suspended'],
    ] as const) {
      expect([refused.code, refused.stdout]).toEqual([1, '']);
      expect(refused.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(refused.stderr).toContain(says);
    }
  }, 240_000);

  it('prints its version and the Node.js running it', async () => {
    const { version } = JSON.parse(readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8')) as { version: string };
    const result = await runCli(platform.rpcUrl, ['--version'], {}, []);
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect(result.stdout).toBe(`payments ${version} (Node.js ${process.version}, ${process.platform}-${process.arch})\n`);
  }, 60_000);

  it('fails with a non-zero exit and one line on stderr', async () => {
    await createUser(platform.deps, { phone_number: '012555011', first_name: 'A', last_name: 'B', currency: 'USD' });
    const [result, badAmount] = await Promise.all([
      runCli(platform.rpcUrl, ['user', 'create', '--phone', '+855 12 555 011', '--first-name', 'A', '--last-name', 'B', '--json']),
      runCli(platform.rpcUrl, ['wallet', 'credit', '--user-id', '1', '--amount', '1.001', '--currency', 'USD', '--reference', 'x', '--json']),
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr.endsWith('\n')).toBe(true);
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain('DUPLICATE_PHONE_NUMBER');
    expect(result.stderr).toContain('phone_number');
    expect(result.stderr).toContain('phone number already taken');

    expect(badAmount.code).not.toBe(0);
    expect(badAmount.stdout).toBe('');
    expect(badAmount.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(badAmount.stderr).toContain('INVALID_AMOUNT');
  }, 240_000);

  it('refuses an operator without a credential, and finds the credentials file when no token is set', async () => {
    // DATA_DIR points at an empty directory, so no credentials file of a dev stack is found either.
    const none = await runCli(platform.rpcUrl, ['ledger', 'check', '--json'], { DATA_DIR: directory });
    expect(none.code).not.toBe(0);
    expect(none.stdout).toBe('');
    expect(none.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(none.stderr).toContain('UNAUTHENTICATED');

    const file = path.join(directory, 'ops.json');
    writeFileSync(file, JSON.stringify({ credential_id: 'from-test', token: platform.adminToken, scopes: ['admin'] }), { mode: 0o600 });
    expect(json(await runCli(platform.rpcUrl, ['ledger', 'check', '--json'], { PAYMENTS_ADMIN_CREDENTIALS: file }))).toMatchObject({ ok: true });
  }, 120_000);

  it('bootstraps an operator credential offline, creates a façade credential with it, lists and revokes it', async () => {
    const bootstrap = await runCli(
      platform.rpcUrl,
      ['create', '--scope', 'admin', '--scope', 'mint', '--scope', 'credentials', '--name', 'first operator', '--json'],
      { DATABASE_URL: platform.config.DATABASE_URL! },
      ['credentials'],
    );
    const first = json(bootstrap);
    expect(first).toMatchObject({ scopes: ['admin', 'mint', 'credentials'] });
    expect(first.token).toMatch(/^pps_cred_[0-9a-f]{16}_/);
    const asFirst = { PAYMENTS_ADMIN_TOKEN: first.token as string };

    const facade = json(await runCli(platform.rpcUrl, ['credentials', 'create', '--scope', 'facade', '--name', 'facade eu-1', '--json'], asFirst));
    expect(facade).toMatchObject({ scopes: ['facade'] });
    const listed = json(await runCli(platform.rpcUrl, ['credentials', 'list', '--json'], asFirst));
    const entries = listed.credentials as Array<Record<string, unknown>>;
    expect(entries.find((entry) => entry.credential_id === facade.credential_id)).toMatchObject({ name: 'facade eu-1', scopes: ['facade'], revoked_at: null });
    expect(JSON.stringify(listed)).not.toContain(facade.token as string);

    // The façade credential may not act as an operator.
    const denied = await runCli(platform.rpcUrl, ['ledger', 'check', '--json'], { PAYMENTS_ADMIN_TOKEN: facade.token as string });
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toContain('PERMISSION_DENIED');

    expect(json(await runCli(platform.rpcUrl, ['credentials', 'revoke', '--credential-id', facade.credential_id as string, '--json'], asFirst))).toEqual({
      credential_id: facade.credential_id,
      revoked: true,
    });
    const again = await runCli(platform.rpcUrl, ['credentials', 'revoke', '--credential-id', facade.credential_id as string, '--json'], asFirst);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('CREDENTIAL_NOT_FOUND');
  }, 240_000);

  it('binds a credential to an existing partner only, offline and online; an admin-only credential cannot mint', async () => {
    const keyFile = path.join(directory, 'bound.pem');
    writeFileSync(keyFile, generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }));
    const partner = json(await runCli(platform.rpcUrl, ['partner', 'create', '--name', 'Bound CLI Partner', '--public-key', keyFile, '--json']));
    const offline = { DATABASE_URL: platform.config.DATABASE_URL! };
    const [unknown, offlineBound, onlineBound, onlineUnknown, adminOnly] = await Promise.all([
      runCli(platform.rpcUrl, ['create', '--scope', 'partner:PNOSUCHPARTNER', '--name', 'x', '--json'], offline, ['credentials']),
      runCli(platform.rpcUrl, ['create', '--scope', `partner:${partner.partner_id as string}`, '--name', 'payouts', '--json'], offline, ['credentials']),
      runCli(platform.rpcUrl, ['credentials', 'create', '--scope', `partner:${partner.partner_id as string}`, '--name', 'payouts 2', '--json']),
      runCli(platform.rpcUrl, ['credentials', 'create', '--scope', 'merchant:MNOSUCHMERCHANT', '--name', 'x', '--json']),
      runCli(platform.rpcUrl, ['create', '--scope', 'admin', '--name', 'admin only', '--json'], offline, ['credentials']),
    ]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('partner:PNOSUCHPARTNER: no such partner');
    expect(json(offlineBound)).toMatchObject({ scopes: [`partner:${partner.partner_id as string}`] });
    expect(json(onlineBound)).toMatchObject({ scopes: [`partner:${partner.partner_id as string}`] });
    expect(onlineUnknown.code).not.toBe(0);
    expect(onlineUnknown.stderr).toContain('no such merchant');
    const denied = await runCli(platform.rpcUrl, ['wallet', 'credit', '--partner-id', partner.partner_id as string, '--amount', '1', '--currency', 'USD', '--reference', 'cli-denied', '--json'], {
      PAYMENTS_ADMIN_TOKEN: json(adminOnly).token as string,
    });
    expect(denied.code).not.toBe(0);
    expect(denied.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(denied.stderr).toContain('PERMISSION_DENIED');
  }, 240_000);

  it('lists the audit trail: the credit, by whom, newest first, filtered by procedure and credential', async () => {
    const user = await createUser(platform.deps, { phone_number: '012555099', first_name: 'Audit', last_name: 'User', currency: 'USD' });
    json(await runCli(platform.rpcUrl, ['wallet', 'credit', '--user-id', user.id, '--amount', '3.00', '--currency', 'USD', '--reference', 'cli-audit-1', '--json']));
    const listed = json(await runCli(platform.rpcUrl, ['audit', 'list', '--procedure', 'CreditWallet', '--limit', '5', '--json']));
    const records = listed.records as Array<Record<string, unknown>>;
    expect(records[0]).toMatchObject({
      procedure: 'payments.admin.v1.AdminService/CreditWallet',
      arguments: { owner: { user_id: user.id }, amount: '3.00', currency: 'USD', reference: 'cli-audit-1' },
      outcome: 'ok',
      credential_id: expect.stringMatching(/^cred_/),
    });
    const mine = json(await runCli(platform.rpcUrl, ['audit', 'list', '--credential-id', records[0]!.credential_id as string, '--json']));
    expect((mine.records as Array<Record<string, unknown>>).every((record) => record.credential_id === records[0]!.credential_id)).toBe(true);
    const bad = await runCli(platform.rpcUrl, ['audit', 'list', '--limit', '0', '--json']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--limit');
  }, 240_000);
  it('lists an owner’s events a page at a time and sends a merchant’s webhooks after a seq again', async () => {
    const partner = { type: 'partner' as const, id: 'P-CLI-EVENTS' };
    for (const subject of ['PT-CLI-1', 'PT-CLI-1', 'PT-CLI-2']) {
      await platform.deps.database.transaction((trx) => recordEvent(trx, { owner: partner, subject, type: 'pre_transfer.created', data: { pre_transfer_id: subject } }));
    }
    const first = json(await runCli(platform.rpcUrl, ['events', 'list', '--partner-id', partner.id, '--limit', '2', '--json']));
    expect(first).toMatchObject({ has_more: true, next_after: 2 });
    expect((first.events as Array<Record<string, unknown>>).map((event) => [event.seq, event.type, event.subject])).toEqual([
      [1, 'pre_transfer.created', 'PT-CLI-1'],
      [2, 'pre_transfer.created', 'PT-CLI-1'],
    ]);
    const rest = json(await runCli(platform.rpcUrl, ['events', 'list', '--partner-id', partner.id, '--after', '2', '--json']));
    expect(rest).toEqual({ events: [expect.objectContaining({ seq: 3, subject: 'PT-CLI-2', data: { pre_transfer_id: 'PT-CLI-2' }, ledger_transaction_id: null })], has_more: false, next_after: 3 });
    // Nothing of the merchant's to send again: an empty answer, the cursor kept.
    expect(json(await runCli(platform.rpcUrl, ['events', 'redeliver', '--merchant-id', 'M-CLI-NONE', '--after', '0', '--json']))).toEqual({ webhook_ids: [], has_more: false, next_after: 0 });
    const both = await runCli(platform.rpcUrl, ['events', 'list', '--merchant-id', 'M1', '--partner-id', 'P1', '--json']);
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain('exactly one of --merchant-id and --partner-id');
    const negative = await runCli(platform.rpcUrl, ['events', 'list', '--partner-id', partner.id, '--after', '-1', '--json']);
    expect(negative.code).not.toBe(0);
    expect(negative.stderr).toContain('--after');
  }, 240_000);
});
