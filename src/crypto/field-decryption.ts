/**
 * Area C encrypted fields (interface "Authentication / Area C" item 6; platform decisions §7): holder_name,
 * bank_code, bank_number, sourceOfFunds and security_code arrive as base64 of an RSA ciphertext under the platform
 * public key. Accepted paddings, tried in this order:
 *
 *   1. RSAES-OAEP, SHA-256 (MGF1 SHA-256, empty label)   Node crypto
 *   2. RSAES-OAEP, SHA-1 (MGF1 SHA-1, empty label)       Node crypto
 *   3. RSAES-PKCS1-v1_5                                  node-forge (Node 20 refuses this padding for decryption,
 *                                                        CVE-2023-46809), in a worker-thread pool (piscina):
 *                                                        forge's pure-JS RSA costs tens of ms per block
 *
 * The plaintext must be non-empty UTF-8. Every failure (not a string, not base64, wrong length or truncated, wrong
 * key, wrong padding, empty or invalid UTF-8) throws the one same error on the field
 * (problem `not_decryptable`), so the endpoint tells nothing about which step failed. Plaintexts are never logged.
 */
import { constants, privateDecrypt, type KeyObject } from 'node:crypto';
import path from 'node:path';
import { Piscina } from 'piscina';
import { reasonError } from '../errors';
import { FIELD_DECRYPTION_REASONS } from './reasons';
import { problem } from '../field-problems';
import type { RsaKeyPair } from './platform-keys';

export type FieldPadding = 'oaep-sha256' | 'oaep-sha1' | 'pkcs1';

/** The one field problem of every decryption failure on `field` (the same code whatever the field). */
export function fieldNotDecryptable(_field: string): string {
  return problem('not_decryptable');
}

/** Longest accepted base64 text (a 16384-bit key's ciphertext is 2732 characters). */
const MAX_BASE64_LENGTH = 4096;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * PKCS#1 v1.5 worker pool limits: at most 2 threads, started on first use, each ending after 10 s idle (so a test
 * run or a stopping process is not held open); 256 queued blocks, beyond which the field fails like any other.
 */
const POOL_MAX_THREADS = 2;
const POOL_IDLE_TIMEOUT_MILLISECONDS = 10_000;
const POOL_MAX_QUEUE = 256;

type FieldKeys = Pick<RsaKeyPair, 'privateKey' | 'privateKeyPem'>;

/**
 * Decryption of encrypted fields with its own PKCS#1 v1.5 worker pool. One per process, created at the composition
 * root (PlatformDeps.fieldDecryption) and closed at shutdown.
 */
export interface FieldDecryption {
  /** The UTF-8 plaintext of one encrypted field value, or undefined for any failure. */
  tryDecrypt(keys: FieldKeys, value: unknown): Promise<string | undefined>;
  /**
   * The plaintext of the encrypted field `field`.
   * @throws DomainError invalid_argument FIELD_NOT_DECRYPTABLE `{[field]: ["not_decryptable"]}` for every cause.
   */
  decrypt(keys: FieldKeys, field: string, value: unknown): Promise<string>;
  /** Stops the worker pool (idle threads also end by themselves). */
  close(): Promise<void>;
}

export function createFieldDecryption(): FieldDecryption {
  let pool: Piscina | undefined;
  const pkcs1Pool = (): Piscina =>
    (pool ??= new Piscina({
      filename: path.join(__dirname, 'pkcs1-v1_5-worker.js'),
      minThreads: 0,
      maxThreads: POOL_MAX_THREADS,
      idleTimeout: POOL_IDLE_TIMEOUT_MILLISECONDS,
      maxQueue: POOL_MAX_QUEUE,
    }));
  const tryDecrypt = (keys: FieldKeys, value: unknown) => tryDecryptWith(pkcs1Pool, keys, value);
  return {
    tryDecrypt,
    async decrypt(keys, field, value) {
      const plaintext = await tryDecrypt(keys, value);
      if (plaintext === undefined) {
        throw reasonError(FIELD_DECRYPTION_REASONS, 'FIELD_NOT_DECRYPTABLE', `${field} could not be decrypted`, {
          [field]: [fieldNotDecryptable(field)],
        });
      }
      return plaintext;
    },
    async close() {
      const closing = pool;
      pool = undefined;
      await closing?.destroy();
    },
  };
}

function oaep(privateKey: KeyObject, ciphertext: Buffer, hash: 'sha256' | 'sha1'): Buffer | undefined {
  try {
    return privateDecrypt({ key: privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: hash }, ciphertext);
  } catch {
    return undefined;
  }
}

async function pkcs1(pkcs1Pool: () => Piscina, privateKeyPem: string, ciphertext: Buffer): Promise<Buffer | undefined> {
  try {
    const plaintext = (await pkcs1Pool().run({ privateKeyPem, ciphertext: new Uint8Array(ciphertext) })) as Uint8Array | null;
    return plaintext ? Buffer.from(plaintext) : undefined;
  } catch {
    return undefined;
  }
}

async function tryDecryptWith(pkcs1Pool: () => Piscina, keys: FieldKeys, value: unknown): Promise<string | undefined> {
  if (typeof value !== 'string') return undefined;
  const text = value.replace(/\s+/g, '');
  if (text.length === 0 || text.length > MAX_BASE64_LENGTH || !BASE64.test(text)) return undefined;
  const ciphertext = Buffer.from(text, 'base64');
  const modulusBytes = Math.ceil((keys.privateKey.asymmetricKeyDetails?.modulusLength ?? 0) / 8);
  if (ciphertext.length !== modulusBytes) return undefined;
  const plaintext =
    oaep(keys.privateKey, ciphertext, 'sha256') ??
    oaep(keys.privateKey, ciphertext, 'sha1') ??
    (await pkcs1(pkcs1Pool, keys.privateKeyPem, ciphertext));
  if (!plaintext || plaintext.length === 0) return undefined;
  try {
    return utf8.decode(plaintext);
  } catch {
    return undefined;
  }
}

/** One decryption outside a process's FieldDecryption (tools, tests): its pool is closed afterwards. */
async function once<T>(work: (decryption: FieldDecryption) => Promise<T>): Promise<T> {
  const decryption = createFieldDecryption();
  try {
    return await work(decryption);
  } finally {
    await decryption.close();
  }
}

/** FieldDecryption.tryDecrypt with a pool of its own (tools, tests). */
export function tryDecryptField(keys: FieldKeys, value: unknown): Promise<string | undefined> {
  return once((decryption) => decryption.tryDecrypt(keys, value));
}

/** FieldDecryption.decrypt with a pool of its own (tools, tests). */
export function decryptField(keys: FieldKeys, field: string, value: unknown): Promise<string> {
  return once((decryption) => decryption.decrypt(keys, field, value));
}
