/**
 * The internal Connect RPC is not a door without a key (docs/security.md, "Internal RPC"): every call over the
 * network presents a service credential with the scope of its service, or a client certificate under mTLS.
 * Calls go over the real network port with plain `fetch` (Connect JSON), as an attacker on the network would.
 */
import { Code } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { createClient } from '@connectrpc/connect';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import forge from 'node-forge';
import { createLogger } from '../../src/logger';
import { AdminService } from '../../src/gen/payments/admin/v1/admin_pb';
import { readRpcFailure } from '../../src/rpc/errors';
import { runRoles } from '../../src/runtime';
import { createServiceCredential, revokeServiceCredential } from '../../src/service-credentials';
import { createTestDatabase, startTestPlatform, testConfig, type TestPlatform } from '../support/platform';

interface Answer {
  status: number;
  body: { code?: string; message?: string } & Record<string, unknown>;
}

/** One Connect-JSON unary call over the network, as any HTTP client can make it. */
async function call(rpcUrl: string, procedure: string, body: unknown, token?: string): Promise<Answer> {
  const response = await fetch(`${rpcUrl}/${procedure}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : {}) as Answer['body'] };
}

const CREDIT = 'payments.admin.v1.AdminService/CreditWallet';
const BALANCES = 'payments.admin.v1.AdminService/GetWalletBalances';

describe('internal RPC credentials', () => {
  let platform: TestPlatform;
  const logLines: string[] = [];
  let merchantId: string;
  beforeAll(async () => {
    platform = await startTestPlatform({ roles: ['api'], logDestination: { write: (line) => void logLines.push(line) }, env: { LOG_LEVEL: 'info' } });
    const created = await platform.clients.admin.createMerchant({ name: 'Auth Shop', callbackUrl: 'https://shop.example/hook', signatureHeader: 'X-Signature' });
    merchantId = created.merchantId;
  });
  afterAll(() => platform.stop());

  const credit = (reference: string) => ({ owner: { merchantId }, amount: '1000.00', currency: 'USD', reference });
  async function usdBalance(): Promise<string> {
    const answer = await call(platform.rpcUrl, BALANCES, { owner: { merchantId } }, platform.adminToken);
    return (answer.body.wallets as Array<{ currency: string; balance: string }>).find((wallet) => wallet.currency === 'USD')!.balance;
  }

  it('refuses an unauthenticated CreditWallet over the network and mints nothing', async () => {
    const before = await usdBalance();
    const answer = await call(platform.rpcUrl, CREDIT, credit('no-token'));
    expect(answer.status).toBe(401);
    expect(answer.body).toEqual({ code: 'unauthenticated', message: 'a valid service credential is required' });
    expect(await usdBalance()).toBe(before);
  });

  it('answers an unknown, a malformed and a wrong token the same way, and logs the refusal without the token', async () => {
    const valid = await createServiceCredential(platform.deps.database, { name: 'victim', scopes: ['admin'] });
    const wrongSecret = `${valid.token.slice(0, -4)}AAAA`;
    const unknownId = valid.token.replace(/cred_[0-9a-f]{16}/, 'cred_0000000000000000');
    const answers = await Promise.all(
      [wrongSecret, unknownId, 'not-a-token', `${valid.token}x`].map((token) => call(platform.rpcUrl, CREDIT, credit(`bad-${token.length}`), token)),
    );
    for (const answer of answers) expect(answer).toEqual({ status: 401, body: { code: 'unauthenticated', message: 'a valid service credential is required' } });
    const refusals = logLines.filter((line) => line.includes('rpc refused'));
    expect(refusals.length).toBeGreaterThanOrEqual(4);
    expect(refusals.join('\n')).toContain('AdminService/CreditWallet');
    expect(logLines.join('\n')).not.toContain(wrongSecret.slice(-40));
    expect(logLines.join('\n')).not.toContain(valid.token.slice(-40));
  });

  it('gives a façade credential the façade services only', async () => {
    const facade = await createServiceCredential(platform.deps.database, { name: 'facade', scopes: ['facade'] });
    const before = await usdBalance();
    const denied = await Promise.all([
      call(platform.rpcUrl, CREDIT, credit('facade-credit'), facade.token),
      call(platform.rpcUrl, 'payments.ledger.v1.LedgerService/Transfer', { reference: 'x', postings: [] }, facade.token),
      call(platform.rpcUrl, 'payments.payin.v1.PayinService/RedeliverWebhook', { webhookId: 'x' }, facade.token),
    ]);
    for (const answer of denied) expect(answer).toEqual({ status: 403, body: { code: 'permission_denied', message: 'the credential does not allow this service' } });
    expect(await usdBalance()).toBe(before);
    const health = await call(platform.rpcUrl, 'payments.health.v1.HealthService/Check', {}, facade.token);
    expect(health.status).toBe(200);
    // No procedure signs a body the api did not produce: the signing RPC is gone, and the gateway needs a credential.
    const sign = await call(platform.rpcUrl, 'payments.transfer.v1.TransferService/SignGatewayResponse', { bodyJson: '{"success":true}' }, facade.token);
    expect(sign.status).toBe(404);
    const gateway = await call(platform.rpcUrl, 'payments.transfer.v1.TransferService/Gateway', { authorization: '', body: '{}' });
    expect(gateway.status).toBe(401);
  });

  it('refuses a revoked credential on the very next call, even right after it was verified', async () => {
    const operator = await createServiceCredential(platform.deps.database, { name: 'leaving operator', scopes: ['admin'] });
    expect((await call(platform.rpcUrl, 'payments.admin.v1.AdminService/CheckLedger', {}, operator.token)).status).toBe(200);
    expect(await revokeServiceCredential(platform.deps.database, platform.deps.authChanges, operator.id)).toBe(true);
    expect((await call(platform.rpcUrl, 'payments.admin.v1.AdminService/CheckLedger', {}, operator.token)).status).toBe(401);
  });

  it('lets a façade in its own process reach the api with its token, and not without', async () => {
    const facade = await createServiceCredential(platform.deps.database, { name: 'remote facade', scopes: ['facade'] });
    const logger = createLogger('silent');
    const withToken = await runRoles(testConfig({ RPC_URL: platform.rpcUrl, RPC_TOKEN: facade.token }), ['facade'], logger);
    const without = await runRoles(testConfig({ RPC_URL: platform.rpcUrl }), ['facade'], logger);
    try {
      expect((await fetch(`${withToken.facadeUrl}/healthz`)).status).toBe(200);
      const refused = await fetch(`${without.facadeUrl}/healthz`);
      expect(refused.status).toBe(503);
    } finally {
      await withToken.stop();
      await without.stop();
    }
  });
});

describe('internal RPC listener limits', () => {
  it('refuses a request message over RPC_READ_MAX_BYTES before it is read into a service', async () => {
    const platform = await startTestPlatform({ roles: ['api'], env: { RPC_READ_MAX_BYTES: '65536' } });
    try {
      const answer = await call(platform.rpcUrl, 'payments.admin.v1.AdminService/CreateUser', { firstName: 'x'.repeat(70_000) }, platform.adminToken);
      expect(answer.body.code).toBe('resource_exhausted');
    } finally {
      await platform.stop();
    }
  });

  it('does not bind a non-loopback RPC_HOST in plaintext, nor while no caller could authenticate', async () => {
    const database = await createTestDatabase();
    const logger = createLogger('silent');
    try {
      // Plaintext beyond loopback is refused whatever credentials exist: mTLS, or an explicit opt-out.
      const plaintext = testConfig({ DATABASE_URL: database.url, RPC_HOST: '0.0.0.0' });
      await expect(runRoles(plaintext, ['api'], logger)).rejects.toThrow(/^invalid configuration: RPC_HOST: 0\.0\.0\.0 is not loopback and the RPC would run without mTLS/);
      const config = testConfig({ DATABASE_URL: database.url, RPC_HOST: '0.0.0.0', RPC_ALLOW_PLAINTEXT: 'true' });
      await expect(runRoles(config, ['api'], logger)).rejects.toThrow(/^invalid configuration: RPC_HOST: 0\.0\.0\.0 is not loopback and no caller could authenticate/);
      const { createDatabase } = await import('../../src/db/knex');
      const knex = createDatabase(database.url, 1);
      await createServiceCredential(knex, { name: 'first', scopes: ['admin'] });
      await knex.destroy();
      await expect(runRoles(plaintext, ['api'], logger)).rejects.toThrow(/without mTLS/);
      const running = await runRoles(config, ['api'], logger);
      expect(running.rpcUrl).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
      await running.stop();
    } finally {
      await database.drop();
    }
  });
});

/** A CA and certificates signed by it (node-forge), PEM. */
function pki() {
  const keys = () => forge.pki.rsa.generateKeyPair(2048);
  const issue = (subject: forge.pki.CertificateField[], issuer: { cert?: forge.pki.Certificate; key?: forge.pki.rsa.PrivateKey }, serial: string, server = false) => {
    const pair = keys();
    const cert = forge.pki.createCertificate();
    cert.publicKey = pair.publicKey;
    cert.serialNumber = serial;
    cert.validity.notBefore = new Date(Date.now() - 60_000);
    cert.validity.notAfter = new Date(Date.now() + 3_600_000);
    cert.setSubject(subject);
    cert.setIssuer(issuer.cert ? issuer.cert.subject.attributes : subject);
    const extensions: object[] = issuer.cert ? [{ name: 'basicConstraints', cA: false }] : [{ name: 'basicConstraints', cA: true }, { name: 'keyUsage', keyCertSign: true }];
    if (server) extensions.push({ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] });
    cert.setExtensions(extensions);
    cert.sign(issuer.key ?? pair.privateKey, forge.md.sha256.create());
    return { cert, key: pair.privateKey, certPem: forge.pki.certificateToPem(cert), keyPem: forge.pki.privateKeyToPem(pair.privateKey) };
  };
  const ca = issue([{ name: 'commonName', value: 'test rpc ca' }], {}, '01');
  const server = issue([{ name: 'commonName', value: '127.0.0.1' }], ca, '02', true);
  const operator = issue([{ name: 'commonName', value: 'ops' }, { shortName: 'OU', value: 'admin' }], ca, '03');
  const facade = issue([{ name: 'commonName', value: 'facade' }, { shortName: 'OU', value: 'facade' }], ca, '04');
  return { ca, server, operator, facade };
}

describe('internal RPC over mTLS', () => {
  it('takes the caller and its scopes from a client certificate signed by RPC_TLS_CLIENT_CA', async () => {
    const { ca, server, operator, facade } = pki();
    const directory = mkdtempSync(path.join(tmpdir(), 'rpc-mtls-'));
    const file = (name: string, text: string) => {
      const target = path.join(directory, name);
      writeFileSync(target, text, { mode: 0o600 });
      return target;
    };
    const platform = await startTestPlatform({
      roles: ['api'],
      env: { RPC_TLS_CERT: file('server.pem', server.certPem), RPC_TLS_KEY: file('server.key', server.keyPem), RPC_TLS_CLIENT_CA: file('ca.pem', ca.certPem) },
    });
    const admin = (client: { certPem: string; keyPem: string } | undefined) =>
      createClient(
        AdminService,
        createConnectTransport({
          baseUrl: platform.rpcUrl,
          httpVersion: '2',
          nodeOptions: { ca: ca.certPem, ...(client ? { cert: client.certPem, key: client.keyPem } : {}) },
        }),
      );
    try {
      expect(platform.rpcUrl).toMatch(/^https:/);
      await expect(admin(operator).checkLedger({})).resolves.toMatchObject({ ok: true });
      const denied = await admin(facade).checkLedger({}).catch((error: unknown) => readRpcFailure(error));
      expect(denied).toMatchObject({ code: Code.PermissionDenied });
      // Without a certificate the TLS handshake itself fails: nothing reaches a service.
      const anonymous = await admin(undefined).checkLedger({}).then(
        () => 'answered',
        () => 'refused',
      );
      expect(anonymous).toBe('refused');
    } finally {
      await platform.stop();
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
