/**
 * Platform keys (docs/security.md "Keys"): separate signing and field-encryption pairs, key ids in every sealed
 * secret, rotation that re-seals every secret at rest, a start-up that refuses a key directory lacking a key the
 * database needs (never regenerating one silently), and key files that must be 0600.
 */
import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LEGACY_DATA_KEY_ID, openSecret, sealSecret } from '../../src/crypto/data-keys';
import { keysMayBeCreated, rotateDataKey, verifyDataKeys } from '../../src/admin/key-registry';
import { addDataKey, keyFingerprint, KeyFileError, loadPlatformKeys, readDataKeyring } from '../../src/crypto/platform-keys';
import { encryptSecret } from '../../src/crypto/secrets';
import { revealCardNumber, requireInstrument } from '../../src/instruments/store';
import { createDatabase } from '../../src/db/knex';
import { createLogger } from '../../src/logger';
import { merchantHmacSecret } from '../../src/onboarding/merchants';
import { runRoles } from '../../src/runtime';
import { loggedInMerchant, newUser, tokenizeLocalCard, SANDBOX_CARDS } from '../support/deposit-setup';
import { startTestPlatform, testConfig, type TestPlatform } from '../support/platform';

/** The variables a `payments serve` child process needs to reach the test platform's database and Temporal. */
function testEnvironment(platform: TestPlatform): Record<string, string> {
  return {
    DATABASE_URL: platform.config.DATABASE_URL!,
    TEMPORAL_ADDRESS: platform.config.TEMPORAL_ADDRESS!,
    TEMPORAL_TASK_QUEUE: platform.config.TEMPORAL_TASK_QUEUE,
    HTTP_PORT: '0',
    RPC_PORT: '0',
  };
}

const directories: string[] = [];
function keyDirectory(): string {
  const directory = mkdtempSync(path.join(tmpdir(), 'platform-keys-'));
  directories.push(directory);
  return path.join(directory, 'keys');
}
afterAll(() => {
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

describe('platform key files', () => {
  it('creates separate signing and field-encryption pairs and a data key, every private file 0600', () => {
    const directory = keyDirectory();
    const keys = loadPlatformKeys(directory);
    expect(keys.fieldEncryption.publicKeyPem).not.toBe(keys.publicKeyPem);
    expect(keys.fieldEncryptionShared).toBe(false);
    expect(keys.dataKeys.currentId).toBe(LEGACY_DATA_KEY_ID);
    for (const name of ['platform-private.pem', 'field-encryption-private.pem', 'data-encryption.key']) {
      expect([name, (statSync(path.join(directory, name)).mode & 0o777).toString(8)]).toEqual([name, '600']);
    }
    // Loading again reads the same keys.
    expect(loadPlatformKeys(directory).fieldEncryption.publicKeyPem).toBe(keys.fieldEncryption.publicKeyPem);
  });

  it('refuses a private key file that group or others may read', () => {
    const directory = keyDirectory();
    loadPlatformKeys(directory);
    chmodSync(path.join(directory, 'field-encryption-private.pem'), 0o644);
    expect(() => loadPlatformKeys(directory)).toThrow(KeyFileError);
    expect(() => loadPlatformKeys(directory)).toThrow(/field-encryption-private\.pem has mode 0644: a private key file must be 0600/);
  });

  it('stops with one line when the field-encryption pair is missing from a deployment that has keys: never the signing pair instead', () => {
    const directory = keyDirectory();
    const signing = loadPlatformKeys(directory).publicKeyPem;
    for (const name of ['field-encryption-private.pem', 'field-encryption-public.pem']) rmSync(path.join(directory, name));
    expect(() => loadPlatformKeys(directory, { create: false })).toThrow(
      new KeyFileError(
        `PLATFORM_KEY_DIR ${directory} lacks field-encryption-private.pem, and this deployment already has keys: restore the key directory (keys are never regenerated)`,
      ),
    );
    // Nothing was written in its place: no copy of the signing pair.
    expect(existsSync(path.join(directory, 'field-encryption-private.pem'))).toBe(false);
    // On a first start (keys may be created), a missing field pair is a new pair of its own, never a copy.
    const fresh = loadPlatformKeys(directory);
    expect(fresh.publicKeyPem).toBe(signing);
    expect(fresh.fieldEncryptionShared).toBe(false);
    expect(fresh.fieldEncryption.publicKeyPem).not.toBe(fresh.publicKeyPem);
  });

  it('creates nothing when keys may not be created: one line naming every missing file', () => {
    const directory = keyDirectory();
    expect(() => loadPlatformKeys(directory, { create: false })).toThrow(
      new KeyFileError(
        `PLATFORM_KEY_DIR ${directory} lacks platform-private.pem, data-encryption.key, field-encryption-private.pem, and this deployment already has keys: restore the key directory (keys are never regenerated)`,
      ),
    );
    expect(existsSync(directory)).toBe(false);
    loadPlatformKeys(directory);
    rmSync(path.join(directory, 'data-encryption.key'));
    expect(() => loadPlatformKeys(directory, { create: false })).toThrow(/lacks data-encryption\.key, and this deployment already has keys/);
    expect(existsSync(path.join(directory, 'data-encryption.key'))).toBe(false);
  });

  it('does not guess a first start while the database cannot answer', async () => {
    const unreachable = createDatabase('postgres://postgres@127.0.0.1:1/none');
    try {
      await expect(keysMayBeCreated(unreachable)).rejects.toThrow(/^PLATFORM_KEY_DIR lacks key files and the database cannot tell a first start from a lost key directory/);
    } finally {
      await unreachable.destroy();
    }
  });

  it('names the key in every sealed secret, and opens secrets under every key after a new one is added', () => {
    const directory = keyDirectory();
    const keys = loadPlatformKeys(directory);
    const first = sealSecret(keys.dataKeys, 'hmac', 'ctx');
    expect(first).toMatch(/^v2\.k0\./);
    const legacy = encryptSecret(keys.dataKey, 'old', 'ctx');
    expect(legacy).toMatch(/^v1\./);
    const added = addDataKey(directory);
    const reloaded = loadPlatformKeys(directory);
    expect(reloaded.dataKeys.currentId).toBe(added);
    expect(sealSecret(reloaded.dataKeys, 'hmac', 'ctx')).toMatch(new RegExp(`^v2\\.${added}\\.`));
    expect(openSecret(reloaded.dataKeys, first, 'ctx')).toBe('hmac');
    expect(openSecret(reloaded.dataKeys, legacy, 'ctx')).toBe('old');
    // The first process, loaded before the key was added, opens the new key's secrets on first sight.
    expect(openSecret(keys.dataKeys, sealSecret(reloaded.dataKeys, 'new', 'ctx'), 'ctx')).toBe('new');
  });
});

describe('data key rotation and start-up checks', () => {
  let platform: TestPlatform;
  let directory: string;
  beforeAll(async () => {
    directory = keyDirectory();
    platform = await startTestPlatform({ env: { PLATFORM_KEY_DIR: directory } });
  });
  afterAll(() => platform.stop());

  it('re-seals every merchant secret and vaulted number under a new key, and every secret still opens', async () => {
    const merchant = await loggedInMerchant(platform, 'Rotating Shop');
    const user = await newUser(merchant);
    const cardToken = await tokenizeLocalCard(platform, merchant, user.id, SANDBOX_CARDS.local);
    const merchantId = merchant.options.merchantId;
    const secretBefore = await merchantHmacSecret(platform.deps, merchantId);
    const sealedBefore = (await platform.deps.database('instruments').where({ token: cardToken }).first('number_encrypted')).number_encrypted as string;
    expect(sealedBefore).toMatch(/^v2\.k0\./);

    const rotated = await platform.clients.admin.rotateDataKey({});
    expect(rotated.keyId).toMatch(/^k[0-9a-z]+$/);
    expect(rotated.keyId).not.toBe('k0');
    expect(rotated.merchantsResealed).toBeGreaterThanOrEqual(1n);
    expect(rotated.instrumentsResealed).toBeGreaterThanOrEqual(1n);
    const prefix = `v2.${rotated.keyId}.`;
    const merchants = (await platform.deps.database('merchants').select('hmac_secret_encrypted')) as Array<{ hmac_secret_encrypted: string }>;
    const instruments = (await platform.deps.database('instruments').select('number_encrypted')) as Array<{ number_encrypted: string }>;
    expect(merchants.every((row) => row.hmac_secret_encrypted.startsWith(prefix))).toBe(true);
    expect(instruments.every((row) => row.number_encrypted.startsWith(prefix))).toBe(true);
    expect(await merchantHmacSecret(platform.deps, merchantId)).toBe(secretBefore);
    const instrument = await requireInstrument(platform.deps.database, { merchantId, token: cardToken });
    await expect(revealCardNumber(platform.deps, instrument)).resolves.toBe(SANDBOX_CARDS.local);
    // New secrets are sealed under the new key at once in this process.
    await loggedInMerchant(platform, 'After Rotation');
    expect((await platform.deps.database('merchants').orderBy('created_at', 'desc').first('hmac_secret_encrypted')).hmac_secret_encrypted).toMatch(new RegExp(`^v2\\.${rotated.keyId}\\.`));

    // Idempotent: re-sealing under the current key finds nothing left.
    expect(await platform.clients.admin.rotateDataKey({ resealOnly: true })).toMatchObject({ keyId: rotated.keyId, merchantsResealed: 0n, instrumentsResealed: 0n });
  });

  it('refuses to start with a key directory that lacks a key the database needs, or holds another one', async () => {
    const logger = createLogger('silent');
    const config = (keys: string) => testConfig({ DATABASE_URL: platform.config.DATABASE_URL!, PLATFORM_KEY_DIR: keys });
    // An empty (or wrongly mounted) directory against a deployment that has keys: refused, and no key is made.
    const empty = keyDirectory();
    await expect(runRoles(config(empty), ['api'], logger)).rejects.toThrow(/^PLATFORM_KEY_DIR \S+ lacks platform-private\.pem, data-encryption\.key, field-encryption-private\.pem, and this deployment already has keys/);
    expect(existsSync(empty)).toBe(false);
    // A directory with keys of its own: its k0 is not the database's k0, and the rotated key is missing.
    const stranger = keyDirectory();
    loadPlatformKeys(stranger);
    await expect(runRoles(config(stranger), ['api'], logger)).rejects.toThrow(/PLATFORM_KEY_DIR (lacks data key|holds another data key under id k0)/);
    // The right directory without the rotated key file.
    const partial = keyDirectory();
    loadPlatformKeys(partial);
    for (const name of ['platform-private.pem', 'platform-public.pem', 'field-encryption-private.pem', 'field-encryption-public.pem', 'data-encryption.key']) {
      copyFileSync(path.join(directory, name), path.join(partial, name));
    }
    await expect(runRoles(config(partial), ['api'], logger)).rejects.toThrow(/^PLATFORM_KEY_DIR lacks data key k[0-9a-z]+, under which the database holds sealed secrets/);
    // Nothing was generated in the way of the real keys: the key directory still has only k0 in it.
    expect(readdirSync(partial).includes('data-keys')).toBe(false);
    // The right keys but for the field-encryption pair: refused, never the signing pair in its place.
    const noFieldPair = keyDirectory();
    cpSync(directory, noFieldPair, { recursive: true });
    for (const name of ['field-encryption-private.pem', 'field-encryption-public.pem']) rmSync(path.join(noFieldPair, name));
    await expect(runRoles(config(noFieldPair), ['api'], logger)).rejects.toThrow(
      new KeyFileError(`PLATFORM_KEY_DIR ${noFieldPair} lacks field-encryption-private.pem, and this deployment already has keys: restore the key directory (keys are never regenerated)`),
    );
    expect(existsSync(path.join(noFieldPair, 'field-encryption-private.pem'))).toBe(false);
  });

  it('registers a rotated key before making it current: a failed registration leaves the current key as it was', async () => {
    const database = platform.deps.database;
    const currentBefore = readDataKeyring(directory).currentId;
    await database.raw(`
      CREATE FUNCTION refuse_data_key() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'registration refused'; END $$;
      CREATE TRIGGER refuse_data_key BEFORE INSERT ON data_keys FOR EACH ROW EXECUTE FUNCTION refuse_data_key();
    `);
    try {
      await expect(rotateDataKey(database, directory)).rejects.toThrow(/registration refused/);
    } finally {
      await database.raw('DROP TRIGGER refuse_data_key ON data_keys; DROP FUNCTION refuse_data_key();');
    }
    // No process seals under the unregistered key: CURRENT still names the old one.
    expect(readDataKeyring(directory).currentId).toBe(currentBefore);
    // A rotation that goes through registers its key with the fingerprint of the file.
    const rotated = await platform.clients.admin.rotateDataKey({});
    const registered = (await database('data_keys').where({ id: rotated.keyId }).first('fingerprint')) as { fingerprint: string };
    expect(registered.fingerprint).toBe(keyFingerprint(readDataKeyring(directory).keys.get(rotated.keyId)!));
  });

  it('stops `payments serve` with one line on stderr when a private key file is group- or world-readable', async () => {
    const copy = keyDirectory();
    cpSync(directory, copy, { recursive: true });
    chmodSync(path.join(copy, 'platform-private.pem'), 0o644);
    const result = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [path.resolve(__dirname, '../../bin/payments'), 'serve', '--roles', 'api'],
        {
          env: { ...process.env, ...testEnvironment(platform), PLATFORM_KEY_DIR: copy, LOG_LEVEL: 'silent' },
          timeout: 60_000,
        },
        (error, _stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stderr }),
      );
    });
    expect(result).toEqual({ code: 1, stderr: `${path.join(copy, 'platform-private.pem')} has mode 0644: a private key file must be 0600 (chmod 600 it)\n` });
  });

  it('checks the legacy key against a secret sealed before key ids existed', async () => {
    const database = platform.deps.database;
    const merchantId = ((await database('merchants').first('id')) as { id: string }).id;
    const legacySealed = encryptSecret(platform.deps.keys.dataKey, 'legacy-secret', `merchant:${merchantId}:hmac_secret`);
    await database('merchants').where({ id: merchantId }).update({ hmac_secret_encrypted: legacySealed });
    await database('data_keys').where({ id: 'k0' }).update({ fingerprint: null });
    await expect(verifyDataKeys(database, platform.deps.keys.dataKeys)).resolves.toBeUndefined();
    expect((await database('data_keys').where({ id: 'k0' }).first('fingerprint')).fingerprint).toMatch(/^[0-9a-f]{32}$/);
    await database('data_keys').where({ id: 'k0' }).update({ fingerprint: null });
    const stranger = loadPlatformKeys(keyDirectory()).dataKeys;
    await expect(verifyDataKeys(database, { ...stranger, keys: new Map([...platform.deps.keys.dataKeys.keys, ['k0', stranger.keys.get('k0')!]]) })).rejects.toThrow(
      /data key k0 does not open the database's sealed secrets/,
    );
    // Put it back as it was for the ledger check at the end.
    await platform.clients.admin.rotateDataKey({ resealOnly: true });
  });
});
