/**
 * Sealing secrets at rest under the data keys (docs/security.md "Keys"): AES-256-GCM, every ciphertext naming the
 * key it was sealed under, so keys can be added (`payments admin keys rotate`) and old ciphertexts still open.
 *
 *   v2.<key id>.<iv>.<ciphertext>.<tag>   (base64url parts)
 *   v1.<iv>.<ciphertext>.<tag>            sealed before key ids existed: under key `k0`
 */
import { decryptSecret, encryptSecret } from './secrets';

/** The id of the first data key (`data-encryption.key`), and of every `v1` ciphertext. */
export const LEGACY_DATA_KEY_ID = 'k0';

export interface DataKeyring {
  /** The key new secrets are sealed under. */
  currentId: string;
  current: Buffer;
  /** Every key by id (32 bytes each). */
  keys: ReadonlyMap<string, Buffer>;
  /** Finds a key this ring does not hold yet (added by another process since start-up), or undefined. */
  lookup?(id: string): Buffer | undefined;
}

/** Thrown when a ciphertext names a key the key directory lacks. */
export class UnknownDataKeyError extends Error {
  constructor(readonly keyId: string) {
    super(`cannot open secret: data key ${keyId} is not in PLATFORM_KEY_DIR`);
    this.name = 'UnknownDataKeyError';
  }
}

/** The key id a sealed secret names (`k0` for v1), or undefined when it is not a sealed secret. */
export function keyIdOf(sealed: string): string | undefined {
  if (sealed.startsWith('v1.')) return LEGACY_DATA_KEY_ID;
  if (sealed.startsWith('v2.')) return sealed.split('.')[1];
  return undefined;
}

/** Seals `plaintext` under the current key, bound to `associatedData`. */
export function sealSecret(ring: DataKeyring, plaintext: string, associatedData: string): string {
  // The id first, then its own key: a ring that refreshes between two reads still pairs them right.
  const id = ring.currentId;
  const key = ring.keys.get(id) ?? ring.current;
  // encryptSecret writes v1.<iv>.<ct>.<tag>; the key id goes after the version.
  return `v2.${id}.${encryptSecret(key, plaintext, associatedData).slice(3)}`;
}

/**
 * Opens a sealed secret under the key it names.
 * @throws UnknownDataKeyError when that key is missing; Error "cannot decrypt secret" when it does not open
 */
export function openSecret(ring: DataKeyring, sealed: string, associatedData: string): string {
  const id = keyIdOf(sealed);
  if (id === undefined) throw new Error('cannot decrypt secret: unknown format');
  const key = ring.keys.get(id) ?? ring.lookup?.(id);
  if (!key) throw new UnknownDataKeyError(id);
  return decryptSecret(key, id === LEGACY_DATA_KEY_ID && sealed.startsWith('v1.') ? sealed : `v1.${sealed.split('.').slice(2).join('.')}`, associatedData);
}

/** True when `sealed` is under the ring's current key (rotation re-seals the others). */
export function isCurrent(ring: DataKeyring, sealed: string): boolean {
  return keyIdOf(sealed) === ring.currentId && sealed.startsWith('v2.');
}
