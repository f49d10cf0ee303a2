/**
 * What a merchant does to an Area C encrypted field (platform decisions §7): RSA-encrypt the UTF-8 plaintext under
 * the platform public key and base64 it. OAEP through Node crypto; PKCS#1 v1.5 through node-forge (the same
 * library the platform decrypts it with), since Node 20 refuses that padding only for decryption but the forge path
 * keeps the test independent of Node's choice.
 */
import { constants, publicEncrypt } from 'node:crypto';
import forge from 'node-forge';
import type { FieldPadding } from '../../src/crypto/field-decryption';

export type { FieldPadding };

/** base64 of the RSA ciphertext of `plaintext` (UTF-8) under `publicKeyPem` (SPKI PEM). Default OAEP SHA-256. */
export function encryptField(publicKeyPem: string, plaintext: string, padding: FieldPadding = 'oaep-sha256'): string {
  if (padding === 'pkcs1') {
    const key = forge.pki.publicKeyFromPem(publicKeyPem);
    const ciphertext = key.encrypt(forge.util.encodeUtf8(plaintext), 'RSAES-PKCS1-V1_5');
    return forge.util.encode64(ciphertext);
  }
  return publicEncrypt(
    { key: publicKeyPem, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: padding === 'oaep-sha256' ? 'sha256' : 'sha1' },
    Buffer.from(plaintext, 'utf8'),
  ).toString('base64');
}

/** The JSON plaintext of `sourceOfFunds` for a card (interface "tokenize_visa_master"). */
export function sourceOfFundsJson(card: { number: string; securityCode?: string; month?: string; year?: string }): string {
  return JSON.stringify({
    type: 'CARD',
    provided: {
      card: { number: card.number, securityCode: card.securityCode ?? '123', expiry: { month: card.month ?? '12', year: card.year ?? '39' } },
    },
  });
}
