/**
 * What an Area C merchant (and its payers) do beside the signed calls, from the documents only: encrypt a field with
 * the platform's public key in "PKCS1 mode" (interface "Authentication / Area C" items 5 and 6; platform decisions
 * §7: base64 of the RSA ciphertext), scan a bank account's QR image, run html_confirm_payment's form.
 */
import { constants, publicEncrypt } from 'node:crypto';
import jsQR from 'jsqr';
import { PNG } from 'pngjs';

/** base64 of RSAES-PKCS1-v1_5 of the UTF-8 `plaintext` under `publicKeyPem`. */
export function encryptField(publicKeyPem: string, plaintext: string): string {
  return publicEncrypt({ key: publicKeyPem, padding: constants.RSA_PKCS1_PADDING }, Buffer.from(plaintext, 'utf8')).toString('base64');
}

/** The text a QR code in a PNG image holds (what a phone's camera reads). */
export function scanQr(png: Buffer): string {
  const image = PNG.sync.read(png);
  const code = jsQR(new Uint8ClampedArray(image.data), image.width, image.height);
  if (!code) throw new Error('no QR code in the image');
  return code.data;
}

/** The first form of an HTML document: its action and its inputs (name → value), as a browser submits it. */
export function firstForm(html: string): { action: string; fields: URLSearchParams } {
  const form = /<form\b[^>]*\baction="([^"]*)"[^>]*>([\s\S]*?)<\/form>/i.exec(html);
  if (!form) throw new Error('no form in the HTML');
  const fields = new URLSearchParams();
  for (const input of form[2]!.matchAll(/<input\b[^>]*>/gi)) {
    const name = /\bname="([^"]*)"/.exec(input[0])?.[1];
    if (name) fields.append(name, /\bvalue="([^"]*)"/.exec(input[0])?.[1] ?? '');
  }
  return { action: form[1]!.replace(/&amp;/g, '&'), fields };
}

/** The value of the hidden input `result` of an HTML page. */
export function hiddenResult(html: string): string | undefined {
  const input = /<input\b[^>]*\bname="result"[^>]*>/i.exec(html)?.[0];
  return input ? /\bvalue="([^"]*)"/.exec(input)?.[1] : undefined;
}

/** A `result` value: base64 of a JSON object. */
export function decodeResult(base64: string): unknown {
  return JSON.parse(Buffer.from(base64, 'base64').toString('utf8'));
}
