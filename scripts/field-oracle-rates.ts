/**
 * Measures how often random RSA blocks sent as an Area C encrypted field are accepted, per field rule: the numbers
 * of docs/security.md "Encrypted fields are no padding oracle". Each block is opened exactly as a request's field is
 * (`tryDecryptField`: OAEP SHA-256, OAEP SHA-1, PKCS#1 v1.5 with implicit rejection) and its plaintext checked by
 * every field's rule.
 *
 *   npx tsx scripts/field-oracle-rates.ts [blocks per class, default 10000] [seed]
 *
 * Classes: conformant PKCS#1 v1.5 blocks carrying garbage of a uniform length (the review's probe), conformant blocks
 * whose every byte after 00 02 is random (what a Bleichenbacher multiplier produces), and random non-conformant
 * blocks. Also prints the mean time per field of each class (one core; the machine's noise included).
 */
import { generateKeyPairSync } from 'node:crypto';
import { tryDecryptField } from '../src/crypto/field-decryption';
import { readSourceOfFunds } from '../src/instruments/service';
import { holderNameOf, normalizeAccountNumber, normalizeCardNumber, validSecurityCode } from '../src/instruments/store';
import { conformantBlock, encryptBlock, isConformant, nonConformantBlock, seededBytes } from '../test/support/field-encryption';

const RULES: Record<string, (text: string) => unknown> = {
  holder_name: holderNameOf,
  bank_code: normalizeCardNumber,
  bank_number: normalizeAccountNumber,
  security_code: (text) => (validSecurityCode(text) ? text : undefined),
  sourceOfFunds: (text) => readSourceOfFunds(text, {}),
};

function main(): void {
  const blocks = Number(process.argv[2] ?? 10_000);
  const random = seededBytes(process.argv[3] ?? 'field-oracle-rates');
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const k = 256;
  const classes: Record<string, () => Buffer> = {
    'conformant, garbage of uniform length': () => conformantBlock(k, random),
    'conformant, random after 00 02': () => {
      for (;;) {
        const block = Buffer.concat([Buffer.from([0, 2]), random(k - 2)]);
        if (isConformant(block)) return block;
      }
    },
    'non-conformant, random': () => nonConformantBlock(k, random),
  };
  const rows = [];
  for (const [name, make] of Object.entries(classes)) {
    const accepted = Object.fromEntries(Object.keys(RULES).map((field) => [field, 0]));
    let reachedRule = 0;
    let elapsed = 0n;
    for (let index = 0; index < blocks; index += 1) {
      const ciphertext = encryptBlock(publicKey, make());
      const started = process.hrtime.bigint();
      tryDecryptField({ privateKey }, ciphertext, (text) => {
        reachedRule += 1;
        for (const [field, rule] of Object.entries(RULES)) if (rule(text) !== undefined) accepted[field]! += 1;
        return undefined;
      });
      elapsed += process.hrtime.bigint() - started;
    }
    rows.push({ class: name, tried: blocks, reachedRule, ...accepted, msPerField: Number(elapsed / BigInt(blocks)) / 1e6 });
  }
  console.table(rows);
}

main();
