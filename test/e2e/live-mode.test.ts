/**
 * Live mode (PAYMENTS_MODE=live) is the default of every shipped artifact and has no sandbox: the Docker image's
 * environment and every docker-compose role (read here as data) run in live mode; without a configured card acquirer
 * a card or bank deposit is refused with a documented error and moves nothing; the sandbox test card does not work;
 * a live process refuses a database holding the demo data, and `payments serve` refuses a sandbox setting with one
 * line.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { DEMO_SETTING_KEY } from '../../src/onboarding/demo';
import { runRoles } from '../../src/runtime';
import { encryptedSecurityCode, loggedInMerchant, newUser, tokenizeVisaMaster } from '../support/deposit-setup';
import { composeFile, composeRoles, COMPOSE_SECRETS, dockerImageEnvironment } from '../support/deployment-files';
import { createTestDatabase, startTestPlatform, testConfig, type TestPlatform } from '../support/platform';

const ROOT = path.join(__dirname, '..', '..');

describe('the shipped artifacts default to live mode', () => {
  it('the Docker image’s environment is live mode', () => {
    const environment = dockerImageEnvironment();
    expect(environment.PAYMENTS_MODE).toBe('live');
    expect(loadConfig(environment).PAYMENTS_MODE).toBe('live');
  });

  it('every docker-compose role runs in live mode, and its settings pass live mode’s checks', () => {
    const roles = composeRoles(COMPOSE_SECRETS);
    expect(roles.map((role) => role.name).sort()).toEqual(expect.arrayContaining(['payments-api', 'payments-facade', 'payments-migrate', 'payments-worker']));
    for (const role of roles.filter((candidate) => !candidate.profiles)) {
      const config = loadConfig({ ...dockerImageEnvironment(), ...role.environment });
      expect([role.name, config.PAYMENTS_MODE]).toEqual([role.name, 'live']);
    }
  });

  it('test mode in docker-compose is the explicit choice of a profile', () => {
    const testMode = composeRoles({ ...COMPOSE_SECRETS, PAYMENTS_MODE: 'test' });
    expect(testMode.find((role) => role.name === 'payments-api')!.environment.PAYMENTS_MODE).toBe('test');
    const sandbox = composeFile(COMPOSE_SECRETS).services['payments-sandbox-upstream'];
    expect(sandbox?.profiles).toEqual(['test-mode']);
  });
});

describe('live mode', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ env: { PAYMENTS_MODE: 'live' } });
  });
  afterAll(() => platform.stop());

  it('refuses a deposit with the sandbox card, and moves nothing', async () => {
    const merchant = await loggedInMerchant(platform, 'Live Shop');
    const user = await newUser(merchant);
    const visaCard = await tokenizeVisaMaster(platform, merchant, user.id);
    const deposits = Number((await platform.deps.database('deposits').count('* as n').first())!.n);
    const reply = await merchant.action('deposit_by_visa_master', { token: visaCard, amount: 1, currency: 'USD', security_code: encryptedSecurityCode(platform) });
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({ success: false, code: 400, message: 'Bad Request', error: { token: ['Card and bank deposits are not available.'] } });
    expect(Number((await platform.deps.database('deposits').count('* as n').first())!.n)).toBe(deposits);
    expect((await platform.deps.ledger.check()).ok).toBe(true);
  });

  it('refuses to start on a database holding the demo data of npm start', async () => {
    const database = await createTestDatabase();
    try {
      const config = testConfig({ DATABASE_URL: database.url, PAYMENTS_MODE: 'live' });
      const seeded = await runRoles(testConfig({ DATABASE_URL: database.url }), ['api'], createLogger('silent'));
      await seeded.deps!.database('platform_settings').insert({ key: DEMO_SETTING_KEY, value: JSON.stringify({ path: '/tmp/demo-credentials.json' }) });
      await seeded.stop();
      const refused = runRoles(config, ['api'], createLogger('silent'));
      await expect(refused).rejects.toBeInstanceOf(ConfigError);
      await expect(refused).rejects.toThrow(/^invalid configuration: PAYMENTS_MODE: live mode refuses a database holding the demo data of npm start/);
    } finally {
      await database.drop();
    }
  });

  it('stops `payments serve` with one line naming a sandbox setting', () => {
    const result = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'payments'), 'serve', '--roles', 'facade'], {
      env: { ...process.env, PAYMENTS_MODE: '', SANDBOX_OTP: '123456' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^invalid configuration: SANDBOX_OTP: is a test-mode setting/)]);
  });
});
