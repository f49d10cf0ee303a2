/**
 * The vault primitive (platform decisions §7): card and account numbers AES-256-GCM encrypted under the current
 * data key (`sealSecret` of src/crypto/data-keys.ts, the same primitive that protects merchant HMAC secrets), bound
 * to the instrument's token as associated data so a ciphertext copied onto another row does not decrypt. Stored
 * form `v2.<key id>.<iv>.<ciphertext>.<tag>` (base64url parts); `v1.` rows from before key ids are under `k0`.
 */
import { openSecret, sealSecret, type DataKeyring } from '../crypto/data-keys';

/** The associated data of an instrument's number (rotation re-seals with it). */
export function numberContext(token: string): string {
  return `instrument:${token}:number`;
}

/** Encrypts a card or account number for the row of `token`. */
export function sealNumber(dataKeys: DataKeyring, token: string, number: string): string {
  return sealSecret(dataKeys, number, numberContext(token));
}

/**
 * Decrypts what `sealNumber` stored for `token`.
 * @throws Error "cannot decrypt secret…" when the key, token or ciphertext does not match; UnknownDataKeyError
 */
export function openNumber(dataKeys: DataKeyring, token: string, sealed: string): string {
  return openSecret(dataKeys, sealed, numberContext(token));
}
