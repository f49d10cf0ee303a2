/**
 * Area C authority, tried as an attacker on the internal network: a credential of the façade, one captured signed
 * /do-action request (its headers, session and body) and the RPC port. Money moves only as the merchant's signed
 * body says (docs/security.md "Area C"); a request without the merchant's proof moves money only for a caller whose
 * credential is bound to that merchant.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { randomBytes } from 'node:crypto';
import { signRequestParameters } from '../../src/crypto/rsa2';
import { sha256Hex } from '../../src/crypto/secrets';
import { MerchantStatus } from '../../src/gen/payments/admin/v1/admin_pb';
import { getUser } from '../../src/onboarding';
import { createPlatformClients, type PlatformClients } from '../../src/rpc/clients';
import { createServiceCredential } from '../../src/service-credentials';
import { onboardMerchantClient, type MerchantClient } from '../support/merchant-client';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { fundUser } from '../support/wallets';

describe('Area C: the api acts only on what the merchant signed', () => {
  let platform: TestPlatform;
  let merchant: MerchantClient;
  let merchantId: string;
  let privateKey: string;
  let facade: PlatformClients;
  let from: { id: number };
  let to: { id: number };

  beforeAll(async () => {
    platform = await startTestPlatform();
    const onboarded = await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Victim Shop');
    merchant = onboarded.client;
    merchantId = onboarded.merchant.id;
    privateKey = onboarded.credentials.private_key!;
    expect((await merchant.login()).status).toBe(200);
    const make = async (phone: string) =>
      (await merchant.action('create_user', { phone_number: phone, first_name: 'Sok', last_name: 'Dara', address: 'Phnom Penh', currency: 'USD' })).body.data;
    from = await make('012600100');
    to = await make('012600101');
    await fundUser(platform, from.id, 100_000n);
    const { token } = await createServiceCredential(platform.deps.database, { name: 'stolen facade', scopes: ['facade'] });
    facade = createPlatformClients(platform.rpcUrl, { credentials: { token, tls: platform.rpcTls } });
  });
  afterAll(() => platform.stop());

  const posted = async (userId: number) => {
    const user = (await getUser(platform.deps.database, String(userId)))!;
    return (await platform.deps.ledger.getAccount(user.wallet_account_id)).posted_units;
  };

  /** What the attacker captured of one signed request (headers, session, body), as the façade forwards it. */
  function captured(body: Record<string, unknown>, sessionToken = merchant.token) {
    return {
      envelope: { merchantId, merchantSecretKey: merchant.options.merchantSecretKey, body: JSON.stringify(signRequestParameters(body, privateKey)) },
      sessionToken,
    };
  }

  /** A credential of the façade's scope whose scopes also bind it to `owners` (as the credential scopes name them). */
  async function boundClients(owners: string[]): Promise<PlatformClients> {
    const id = `cred_${randomBytes(8).toString('hex')}`;
    const secret = randomBytes(32).toString('base64url');
    await platform.deps.database('service_credentials').insert({ id, name: 'bound service', scopes: ['facade', ...owners], secret_hash: sha256Hex(secret) });
    return createPlatformClients(platform.rpcUrl, { credentials: { token: `pps_${id}_${secret}`, tls: platform.rpcTls } });
  }

  async function refusal(call: Promise<unknown>): Promise<ConnectError> {
    const error = await call.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(ConnectError);
    return error as ConnectError;
  }

  it('moves nothing when the typed amount differs from the signed one', async () => {
    const before = await posted(from.id);
    const auth = captured({ service: 'transfer', from_user_id: from.id, to_user_id: to.id, amount: 0.01, currency: 'USD', request_id: 'CAPTURED-1' });
    const error = await refusal(
      facade.wallet.transfer({ auth, fromUserId: String(from.id), toUserId: String(to.id), amountUnits: 90_000n, currency: 'USD' }),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(await posted(from.id)).toBe(before);
  });

  it('moves nothing when the typed users differ from the signed ones', async () => {
    const before = await posted(to.id);
    const auth = captured({ service: 'transfer', from_user_id: from.id, to_user_id: to.id, amount: 0.01, currency: 'USD', request_id: 'CAPTURED-2' });
    await refusal(facade.wallet.transfer({ auth, fromUserId: String(to.id), toUserId: String(from.id), amountUnits: 1n, currency: 'USD' }));
    expect(await posted(to.id)).toBe(before);
  });

  it('moves nothing with the proof of another service (a signed list_fees used for a transfer)', async () => {
    const before = await posted(from.id);
    const auth = captured({ service: 'list_fees' });
    await refusal(facade.wallet.transfer({ auth, fromUserId: String(from.id), toUserId: String(to.id), amountUnits: 500n, currency: 'USD' }));
    expect(await posted(from.id)).toBe(before);
  });

  it('moves nothing with a captured signed login body used as the proof of an action', async () => {
    const before = await posted(from.id);
    const auth = captured({ user_name: merchant.options.userName, password: merchant.options.password, timestamp: Math.floor(Date.now() / 1000) });
    const error = await refusal(facade.wallet.transfer({ auth, fromUserId: String(from.id), toUserId: String(to.id), amountUnits: 500n, currency: 'USD' }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(await posted(from.id)).toBe(before);
  });

  it('moves nothing when a typed field is added that the signed body does not hold (fees)', async () => {
    const before = await posted(from.id);
    const auth = captured({ service: 'transfer', from_user_id: from.id, to_user_id: to.id, amount: 0.01, currency: 'USD', request_id: 'CAPTURED-3' });
    await refusal(facade.wallet.transfer({ auth, fromUserId: String(from.id), toUserId: String(to.id), amountUnits: 1n, currency: 'USD', feesAmountUnits: 50_000n, feesCurrency: 'USD' }));
    expect(await posted(from.id)).toBe(before);
  });

  it('acts on exactly the signed body when the typed fields are its own', async () => {
    const before = await posted(from.id);
    const auth = captured({ service: 'transfer', from_user_id: from.id, to_user_id: to.id, amount: 0.25, currency: 'USD', request_id: 'SIGNED-OK' });
    const answer = await facade.wallet.transfer({ auth, fromUserId: String(from.id), toUserId: String(to.id), amountUnits: 25n, currency: 'USD' });
    expect(answer.reference).toMatch(/^TRF/);
    expect(await posted(from.id)).toBe(before - 25n);
  });

  it('moves money without ActionAuth only for a caller whose credential is bound to that merchant', async () => {
    const before = await posted(from.id);
    const bound = await boundClients([`merchant:${merchantId}`]);
    const answer = await bound.wallet.transfer({ merchantId, fromUserId: String(from.id), toUserId: String(to.id), amountUnits: 7n, currency: 'USD', idempotencyKey: 'bound-1' });
    expect(answer.reference).toMatch(/^TRF/);
    expect(await posted(from.id)).toBe(before - 7n);

    const elsewhere = await boundClients(['merchant:M-SOMEONE-ELSE', 'partner:' + merchantId]);
    const error = await refusal(elsewhere.wallet.transfer({ merchantId, fromUserId: String(from.id), toUserId: String(to.id), amountUnits: 7n, currency: 'USD' }));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(await posted(from.id)).toBe(before - 7n);
  });

  it('moves nothing for a credential bound to a merchant that is suspended', async () => {
    const before = await posted(from.id);
    const bound = await boundClients([`merchant:${merchantId}`]);
    await platform.clients.admin.setMerchantStatus({ merchantId, status: MerchantStatus.SUSPENDED });
    try {
      const error = await refusal(bound.wallet.transfer({ merchantId, fromUserId: String(from.id), toUserId: String(to.id), amountUnits: 9n, currency: 'USD', idempotencyKey: 'bound-suspended' }));
      expect(error.code).toBe(Code.Unauthenticated);
      expect(await posted(from.id)).toBe(before);
    } finally {
      await platform.clients.admin.setMerchantStatus({ merchantId, status: MerchantStatus.ACTIVE });
    }
  });

  it('moves nothing for a request without the merchant proof from a credential bound to no merchant', async () => {
    const before = await posted(from.id);
    const error = await refusal(facade.wallet.transfer({ merchantId, fromUserId: String(from.id), toUserId: String(to.id), amountUnits: 500n, currency: 'USD' }));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(await posted(from.id)).toBe(before);
  });
});
