/**
 * The wallet bench's HTTP floor (bench/support/http-floor.ts): it does the signature check it stands for, so a body
 * signed by another key, or altered after signing, is refused and never counted as a floor request.
 */
import { generateKeyPairSync } from 'node:crypto';
import { request } from 'undici';
import { startFloorProcess } from '../../bench/support/harness';
import { signRequestParameters } from '../../src/crypto/rsa2';

const merchant = generateKeyPairSync('rsa', { modulusLength: 2048 });
const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });
let floor: Awaited<ReturnType<typeof startFloorProcess>>;

beforeAll(async () => {
  floor = await startFloorProcess(merchant.publicKey.export({ type: 'spki', format: 'pem' }) as string);
}, 60_000);
afterAll(() => floor.stop());

async function post(body: string): Promise<{ status: number; json: { success: boolean; data?: { reference: string } } }> {
  const response = await request(`${floor.url}/do-action`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: response.statusCode, json: (await response.body.json()) as { success: boolean; data?: { reference: string } } };
}

const transfer = { service: 'transfer', from_user_id: '1', to_user_id: '2', amount: 0.01, currency: 'USD', request_id: 'floor-1' };

it("answers a body signed with the merchant's key with a transfer-shaped success", async () => {
  const answer = await post(JSON.stringify(signRequestParameters(transfer, merchant.privateKey)));
  expect(answer).toEqual({ status: 200, json: { success: true, code: 200, message: 'Success', data: { reference: 'TRFfloor-1' } } });
});

it('refuses a body signed with another key, and one altered after signing', async () => {
  expect((await post(JSON.stringify(signRequestParameters(transfer, stranger.privateKey)))).status).toBe(401);
  const altered = { ...signRequestParameters(transfer, merchant.privateKey), amount: 100 };
  expect(await post(JSON.stringify(altered))).toEqual({ status: 401, json: { success: false, code: 401, message: 'Unauthorized' } });
});
