/**
 * The vault primitive (platform decisions §7): card and account numbers AES-256-GCM encrypted under the
 * platform data key (`PlatformKeys.dataKey`) with `encryptSecret` of src/crypto/secrets.ts (the same primitive that
 * protects merchant HMAC secrets), bound to the instrument's token as associated data so a ciphertext copied onto
 * another row does not decrypt. Stored form `v1.<iv>.<ciphertext>.<tag>` (base64url parts).
 */
import { decryptSecret, encryptSecret } from '../crypto/secrets';

function associatedData(token: string): string {
  return `instrument:${token}:number`;
}

/** Encrypts a card or account number for the row of `token`. */
export function sealNumber(dataKey: Buffer, token: string, number: string): string {
  return encryptSecret(dataKey, number, associatedData(token));
}

/**
 * Decrypts what `sealNumber` stored for `token`.
 * @throws Error "cannot decrypt secret…" when the key, token or ciphertext does not match.
 */
export function openNumber(dataKey: Buffer, token: string, sealed: string): string {
  return decryptSecret(dataKey, sealed, associatedData(token));
}
