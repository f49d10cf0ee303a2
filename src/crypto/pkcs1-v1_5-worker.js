'use strict';
/**
 * Worker thread of src/crypto/field-decryption.ts: RSAES-PKCS1-v1_5 decryption through node-forge (Node 20 refuses
 * this padding in crypto.privateDecrypt, CVE-2023-46809). node-forge's pure-JavaScript RSA takes tens of
 * milliseconds per 2048-bit block, so it runs here (a piscina pool) and never blocks the RPC event loop.
 * Plain CommonJS so that every runner (tsx, jest, compiled) can load it as a worker without a transform.
 *
 * Task: { privateKeyPem: string, ciphertext: Uint8Array } → Uint8Array plaintext, or null on any failure.
 */
const { Buffer } = require('node:buffer');
const forge = require('node-forge');

const keys = new Map();

function keyOf(privateKeyPem) {
  let key = keys.get(privateKeyPem);
  if (!key) {
    key = forge.pki.privateKeyFromPem(privateKeyPem);
    if (keys.size >= 8) keys.clear();
    keys.set(privateKeyPem, key);
  }
  return key;
}

module.exports = function decryptPkcs1V15({ privateKeyPem, ciphertext }) {
  try {
    const plaintext = keyOf(privateKeyPem).decrypt(Buffer.from(ciphertext).toString('binary'), 'RSAES-PKCS1-V1_5');
    return new Uint8Array(Buffer.from(plaintext, 'binary'));
  } catch {
    return null;
  }
};
