/**
 * Platform keys (platform decisions §1 PLATFORM_KEY_DIR): an RSA-2048 key pair that signs Area A
 * responses and decrypts Area C encrypted fields, and a 32-byte data-encryption key (AES-256-GCM) for secrets at
 * rest and the card vault. Created on first start with mode 0600; every process of one deployment must share
 * the directory (or its contents).
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface PlatformKeys {
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** SPKI PEM, handed to partners and merchants. */
  publicKeyPem: string;
  /** PKCS#8 PEM of the private key (for the PKCS#1 v1.5 decryption library, never logged). */
  privateKeyPem: string;
  /** 32 bytes for AES-256-GCM. */
  dataKey: Buffer;
}

const PRIVATE_KEY_FILE = 'platform-private.pem';
const PUBLIC_KEY_FILE = 'platform-public.pem';
const DATA_KEY_FILE = 'data-encryption.key';

function writeSecret(file: string, content: string | Buffer): void {
  writeFileSync(file, content, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
}

/**
 * Loads the keys from `directory`, creating any that are missing.
 * @throws when a file exists but is malformed (never silently replaced).
 */
export function loadPlatformKeys(directory: string): PlatformKeys {
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const privatePath = path.join(directory, PRIVATE_KEY_FILE);
  const publicPath = path.join(directory, PUBLIC_KEY_FILE);
  const dataKeyPath = path.join(directory, DATA_KEY_FILE);
  if (!existsSync(privatePath)) {
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    try {
      writeSecret(privatePath, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
      writeFileSync(publicPath, pair.publicKey.export({ type: 'spki', format: 'pem' }) as string, { mode: 0o644 });
    } catch (error) {
      // Another process created them first: use theirs.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  if (!existsSync(dataKeyPath)) {
    try {
      writeSecret(dataKeyPath, randomBytes(32).toString('base64'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  const privateKeyPem = readFileSync(privatePath, 'utf8');
  const privateKey = createPrivateKey(privateKeyPem);
  const publicKey = createPublicKey(privateKey);
  const publicKeyPem = publicKey.export({ type: 'spki', format: 'pem' }) as string;
  const dataKey = Buffer.from(readFileSync(dataKeyPath, 'utf8').trim(), 'base64');
  if (dataKey.length !== 32) throw new Error(`${dataKeyPath}: the data-encryption key must be 32 bytes (base64)`);
  if ((privateKey.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) throw new Error(`${privatePath}: RSA key under 2048 bits`);
  return { privateKey, publicKey, publicKeyPem, privateKeyPem, dataKey };
}
