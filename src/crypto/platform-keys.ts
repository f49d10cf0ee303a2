/**
 * Platform keys (platform decisions §1 PLATFORM_KEY_DIR; docs/security.md "Keys"), created on first start, every
 * private file mode 0600 and refused when group or others may read it:
 *
 *   platform-private.pem / platform-public.pem
 *       RSA-2048 signing pair: signs Area A responses (`platform_public_key` of onboarding verifies them)
 *   field-encryption-private.pem / field-encryption-public.pem
 *       RSA-2048 encryption pair: Area C encrypted fields (`field_encryption_public_key` of onboarding)
 *   data-encryption.key
 *       the first 32-byte data key (id `k0`): AES-256-GCM of secrets at rest, and the root that access-token and
 *       activation-code keys derive from (never rotated: rotating it would void live tokens and activation links)
 *   data-keys/<id>.key, data-keys/CURRENT
 *       data keys added by `payments admin keys rotate`; CURRENT names the one new secrets are sealed under
 *
 * A directory lacking the field-encryption pair is refused like one lacking any other key once the deployment has
 * keys: the signing pair never stands in for it (a lost field key would otherwise go unnoticed, and the signing key
 * would decrypt what merchants encrypt). A directory from before the pairs were separate is upgraded by the operator,
 * who copies the signing pair's files to the field pair's names (docs/operations.md "Keys"); a warning then says the
 * pair is shared.
 * Every process of one deployment shares the directory (or its contents). Keys are created only on a first start
 * (`create`; src/runtime.ts asks the database): a deployment that already has keys refuses a directory lacking one.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { LEGACY_DATA_KEY_ID, type DataKeyring } from './data-keys';

export interface RsaKeyPair {
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** SPKI PEM, handed to partners and merchants. */
  publicKeyPem: string;
}

/** The signing pair (its fields kept at the top level, as before the pairs were separated), and the others. */
export interface PlatformKeys extends RsaKeyPair {
  /** The Area C field-encryption pair. */
  fieldEncryption: RsaKeyPair;
  /** True when the field pair is a copy of the signing pair (an upgraded key directory). */
  fieldEncryptionShared: boolean;
  /** The derivation root (data key `k0`), 32 bytes. */
  dataKey: Buffer;
  /** Every data key by id, and the current one. */
  dataKeys: DataKeyring;
}

const SIGNING_PRIVATE_FILE = 'platform-private.pem';
const SIGNING_PUBLIC_FILE = 'platform-public.pem';
const FIELD_PRIVATE_FILE = 'field-encryption-private.pem';
const FIELD_PUBLIC_FILE = 'field-encryption-public.pem';
const DATA_KEY_FILE = 'data-encryption.key';
export const DATA_KEYS_DIRECTORY = 'data-keys';
const CURRENT_FILE = 'CURRENT';
const KEY_ID = /^k[0-9a-z]{1,16}$/;

/** Thrown when a key file is missing, malformed or too open; the message is one line naming the file. */
export class KeyFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyFileError';
  }
}

function writeSecret(file: string, content: string | Buffer): void {
  writeFileSync(file, content, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
}

/** Refuses a private key file that group or others may read or write. */
function checkPrivate(file: string): void {
  const mode = statSync(file).mode & 0o777;
  if (mode & 0o077) throw new KeyFileError(`${file} has mode ${mode.toString(8).padStart(4, '0')}: a private key file must be 0600 (chmod 600 it)`);
}

/** Creates an RSA pair's files unless the private one exists; another process creating them first wins. */
function ensurePair(privatePath: string, publicPath: string): void {
  if (existsSync(privatePath)) return;
  try {
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeSecret(privatePath, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
    writeFileSync(publicPath, pair.publicKey.export({ type: 'spki', format: 'pem' }) as string, { mode: 0o644 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

function readPair(privatePath: string): RsaKeyPair {
  checkPrivate(privatePath);
  const privateKeyPem = readFileSync(privatePath, 'utf8');
  const privateKey = createPrivateKey(privateKeyPem);
  if ((privateKey.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) throw new KeyFileError(`${privatePath}: RSA key under 2048 bits`);
  const publicKey = createPublicKey(privateKey);
  return { privateKey, publicKey, publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }) as string };
}

function readDataKey(file: string): Buffer {
  checkPrivate(file);
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== 32) throw new KeyFileError(`${file}: a data key must be 32 bytes (base64)`);
  return key;
}

/** The key files `directory` lacks (names relative to it), that loading it would have to create. */
export function missingKeyFiles(directory: string): string[] {
  return [SIGNING_PRIVATE_FILE, DATA_KEY_FILE, FIELD_PRIVATE_FILE].filter((name) => !existsSync(path.join(directory, name)));
}

/** Reads every data key of `directory` and the CURRENT one. */
export function readDataKeyring(directory: string): DataKeyring {
  const keys = new Map<string, Buffer>([[LEGACY_DATA_KEY_ID, readDataKey(path.join(directory, DATA_KEY_FILE))]]);
  const extra = path.join(directory, DATA_KEYS_DIRECTORY);
  let currentId = LEGACY_DATA_KEY_ID;
  if (existsSync(extra)) {
    for (const name of readdirSync(extra)) {
      const id = name.replace(/\.key$/, '');
      if (name.endsWith('.key') && KEY_ID.test(id)) keys.set(id, readDataKey(path.join(extra, name)));
    }
    const currentPath = path.join(extra, CURRENT_FILE);
    if (existsSync(currentPath)) currentId = readFileSync(currentPath, 'utf8').trim();
  }
  const current = keys.get(currentId);
  if (!current) throw new KeyFileError(`${path.join(extra, CURRENT_FILE)} names data key ${currentId}, which the directory lacks`);
  return { currentId, current, keys };
}

/**
 * Writes a new data key into `directory` without making it current (rotation registers it first). @returns its id
 */
export function createDataKey(directory: string): string {
  const extra = path.join(directory, DATA_KEYS_DIRECTORY);
  mkdirSync(extra, { recursive: true, mode: 0o700 });
  const id = `k${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  writeSecret(path.join(extra, `${id}.key`), randomBytes(32).toString('base64'));
  return id;
}

/**
 * Makes the data key `id` of `directory` the one new secrets are sealed under (its CURRENT file).
 * @throws KeyFileError when the directory lacks that key
 */
export function makeDataKeyCurrent(directory: string, id: string): void {
  const extra = path.join(directory, DATA_KEYS_DIRECTORY);
  if (!KEY_ID.test(id) || !existsSync(path.join(extra, `${id}.key`))) throw new KeyFileError(`${extra} lacks data key ${id}`);
  const currentPath = path.join(extra, CURRENT_FILE);
  writeFileSync(`${currentPath}.tmp`, `${id}\n`, { mode: 0o600 });
  // Rename is atomic: a process reading CURRENT sees the old id or the new one, never half a file.
  renameSync(`${currentPath}.tmp`, currentPath);
}

/**
 * Adds a new data key to `directory` and makes it CURRENT. @returns its id
 * Other processes keep sealing under their current key for up to 10 s, and read the new one on first sight.
 */
export function addDataKey(directory: string): string {
  const id = createDataKey(directory);
  makeDataKeyCurrent(directory, id);
  return id;
}

/** How long a process seals under its current key before it looks at the directory's CURRENT again. */
const KEYRING_REFRESH_MILLISECONDS = 10_000;

/**
 * The directory's keyring, kept current: after `keys rotate` (in any process sharing the directory) this process
 * seals under the new key within 10 s, and opens secrets under a key it has not seen yet at once.
 */
function liveKeyring(directory: string): DataKeyring {
  let ring = readDataKeyring(directory);
  let readAt = Date.now();
  const fresh = () => {
    if (Date.now() - readAt > KEYRING_REFRESH_MILLISECONDS) {
      ring = readDataKeyring(directory);
      readAt = Date.now();
    }
    return ring;
  };
  return {
    get currentId() {
      return fresh().currentId;
    },
    get current() {
      return fresh().current;
    },
    get keys() {
      return fresh().keys;
    },
    lookup(id) {
      if (!KEY_ID.test(id)) return undefined;
      ring = readDataKeyring(directory);
      readAt = Date.now();
      return ring.keys.get(id);
    },
  };
}

/** SHA-256 of a key under a fixed label: identifies a key (in the database, in logs) without revealing it. */
export function keyFingerprint(key: Buffer): string {
  return createHash('sha256').update('payments-data-key-check\u0000').update(key).digest('hex').slice(0, 32);
}

/**
 * Loads the keys from `directory`, creating any that are missing when `options.create` (the default; see above).
 * @throws KeyFileError when a file is malformed or too open, or missing while `create` is false: nothing is then
 *         written to the directory (never silently replaced)
 */
export function loadPlatformKeys(directory: string, options: { create?: boolean } = {}): PlatformKeys {
  if (options.create === false) {
    const missing = missingKeyFiles(directory);
    if (missing.length > 0) {
      throw new KeyFileError(
        `PLATFORM_KEY_DIR ${directory} lacks ${missing.join(', ')}, and this deployment already has keys: restore the key directory (keys are never regenerated)`,
      );
    }
  }
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const signing = { privatePath: path.join(directory, SIGNING_PRIVATE_FILE), publicPath: path.join(directory, SIGNING_PUBLIC_FILE) };
  const field = { privatePath: path.join(directory, FIELD_PRIVATE_FILE), publicPath: path.join(directory, FIELD_PUBLIC_FILE) };
  ensurePair(signing.privatePath, signing.publicPath);
  ensurePair(field.privatePath, field.publicPath);
  const dataKeyPath = path.join(directory, DATA_KEY_FILE);
  if (!existsSync(dataKeyPath)) {
    try {
      writeSecret(dataKeyPath, randomBytes(32).toString('base64'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  const signingPair = readPair(signing.privatePath);
  const fieldPair = readPair(field.privatePath);
  const dataKeys = liveKeyring(directory);
  return {
    ...signingPair,
    fieldEncryption: fieldPair,
    fieldEncryptionShared: fieldPair.publicKeyPem === signingPair.publicKeyPem,
    dataKey: dataKeys.keys.get(LEGACY_DATA_KEY_ID)!,
    dataKeys,
  };
}
