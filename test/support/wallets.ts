/** Test money: credits a user's wallet from the platform settlement account, as an outside deposit would. */
import { randomBytes } from 'node:crypto';
import { getUser } from '../../src/onboarding';
import type { TestPlatform } from './platform';

/** Credits `units` (minor units of the user's currency) to the wallet of user `userId`, one balanced ledger transfer. */
export async function fundUser(platform: TestPlatform, userId: number | string, units: bigint): Promise<void> {
  const user = (await getUser(platform.deps.database, String(userId)))!;
  const settlement = await platform.deps.ledger.platformAccount('settlement', user.currency);
  await platform.deps.ledger.transfer({
    idempotency_key: `test-fund-${userId}-${randomBytes(8).toString('hex')}`,
    description: 'test funding',
    postings: [
      { account_id: settlement.id, amount_units: -units },
      { account_id: user.wallet_account_id, amount_units: units },
    ],
  });
}
