/**
 * Sealing of a deposit's confirmation password (OTP / soft token) on its way through Temporal: the Update and the
 * activity input are kept in workflow history, so the password is carried as AES-256-GCM ciphertext under the
 * current data key with the deposit reference as associated data (a seal cannot be replayed on another deposit).
 */
import { openSecret, sealSecret, type DataKeyring } from '../../crypto/data-keys';

/** Seals `password` for the deposit `reference`; the result is opaque text. */
export function sealDepositPassword(dataKeys: DataKeyring, reference: string, password: string): string {
  return sealSecret(dataKeys, password, `deposit-password:${reference}`);
}

/** Opens a seal made by `sealDepositPassword` for the same reference; undefined when it does not open. */
export function openDepositPassword(dataKeys: DataKeyring, reference: string, sealed: string): string | undefined {
  try {
    return openSecret(dataKeys, sealed, `deposit-password:${reference}`);
  } catch {
    return undefined;
  }
}
