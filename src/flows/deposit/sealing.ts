/**
 * Sealing of a deposit's confirmation password (OTP / soft token) on its way through Temporal: the Update and the
 * activity input are kept in workflow history, so the password is carried as AES-256-GCM ciphertext under the
 * platform data key with the deposit reference as associated data (a seal cannot be replayed on another deposit).
 */
import { decryptSecret, encryptSecret } from '../../crypto/secrets';

/** Seals `password` for the deposit `reference`; the result is opaque base64 text. */
export function sealDepositPassword(dataKey: Buffer, reference: string, password: string): string {
  return encryptSecret(dataKey, password, `deposit-password:${reference}`);
}

/** Opens a seal made by `sealDepositPassword` for the same reference; undefined when it does not open. */
export function openDepositPassword(dataKey: Buffer, reference: string, sealed: string): string | undefined {
  try {
    return decryptSecret(dataKey, sealed, `deposit-password:${reference}`);
  } catch {
    return undefined;
  }
}
