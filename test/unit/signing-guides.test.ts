/**
 * The worked vectors of the signing guides: docs/signing-area-c.md, docs/webhooks.md and the openssl
 * commands of docs/signing-area-a.md. Each value shown in a guide is recomputed with the platform's own code
 * (src/crypto, webhookBody) and every shell command a guide shows is run with `openssl` (bash, from the
 * repository root) and its output compared with the guide.
 *
 * In the guides, `<!-- vector:NAME -->` marks the fenced block holding a value and `<!-- run:NAME -->` a command.
 */
import { renderFieldProblems } from '../../rest-facade/merchant/contract';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { hmacSha256Hex, verifyHmacSha256Hex } from '../../src/crypto/hmac';
import { decryptField, tryDecryptField } from '../../src/crypto/field-decryption';
import { holderNameOf } from '../../src/instruments/store';
import { ambiguousParameters, canonicalQueryString, signRequestParameters, signRsa2, verifyRsa2 } from '../../src/crypto/rsa2';
import { problem } from '../../src/field-problems';
import { parseJsonLossless } from '../../src/money';
import { webhookBody, webhookIdOf } from '../../src/flows/payin/activities';
import type { PayinRow } from '../../src/flows/payin/store';
import { createPrivateKey } from 'node:crypto';

const ROOT = path.join(__dirname, '..', '..');
const read = (relative: string) => readFileSync(path.join(ROOT, relative), 'utf8');

/** The marked fenced blocks of a markdown guide: { vector: {name: text}, run: {name: script} }. */
function markedBlocks(markdown: string): { vector: Record<string, string>; run: Record<string, string> } {
  const blocks = { vector: {} as Record<string, string>, run: {} as Record<string, string> };
  for (const match of markdown.matchAll(/<!-- (vector|run):([\w-]+) -->\n```[\w-]*\n([\s\S]*?)\n```/g)) {
    blocks[match[1] as 'vector' | 'run'][match[2]!] = match[3]!;
  }
  return blocks;
}

/** Runs a guide's shell block with bash from the repository root; returns stdout. */
function runShell(script: string): string {
  return execFileSync('bash', ['-e', '-o', 'pipefail', '-c', script], { cwd: ROOT, encoding: 'utf8' });
}

const platformExampleKeys = () => {
  const privateKeyPem = read('test/fixtures/area-a/platform-example-private.pem');
  return { privateKeyPem, privateKey: createPrivateKey(privateKeyPem) };
};

describe('docs/signing-area-c.md', () => {
  const guide = markedBlocks(read('docs/signing-area-c.md'));
  const fixture = (name: string) => read(`test/fixtures/area-c/${name}`);

  it('marks every vector and command the test checks', () => {
    expect(Object.keys(guide.vector).sort()).toEqual(['body', 'canonical', 'canonical-array', 'oaep-sha256', 'sign', 'sourceOfFunds']);
    expect(Object.keys(guide.run).sort()).toEqual(['decrypt-pkcs1', 'encrypt-oaep-sha256', 'encrypt-pkcs1', 'encrypt-source-of-funds', 'sign', 'verify']);
  });

  it('shows the fixture files as they are', () => {
    expect(guide.vector.body).toBe(fixture('request.json'));
    expect(guide.vector.canonical).toBe(fixture('request.canonical.txt'));
    expect(guide.vector.sign).toBe(fixture('request.sign.txt'));
    expect(guide.vector['oaep-sha256']).toBe(fixture('holder_name.oaep-sha256.txt'));
    expect(guide.vector.sourceOfFunds).toBe(fixture('sourceOfFunds.json'));
  });

  it('canonical strings are the platform’s (lossless parse and plain JSON.parse alike)', () => {
    expect(canonicalQueryString(parseJsonLossless(guide.vector.body!) as Record<string, unknown>)).toBe(guide.vector.canonical);
    expect(canonicalQueryString(JSON.parse(guide.vector.body!))).toBe(guide.vector.canonical);
    const arrays = '{"service":"list_banks","page":2,"tags":["a",1],"meta":{"b":2,"a":"x/y"},"note":null}';
    expect(read('docs/signing-area-c.md')).toContain(`\`${arrays}\``);
    expect(canonicalQueryString(parseJsonLossless(arrays) as Record<string, unknown>)).toBe(guide.vector['canonical-array']);
  });

  it('the signature is the platform’s and openssl’s, and verifies with the merchant public key', () => {
    const privateKey = fixture('merchant-private.pem');
    expect(signRsa2(guide.vector.canonical!, privateKey)).toBe(guide.vector.sign);
    expect(signRequestParameters(JSON.parse(guide.vector.body!), privateKey).sign).toBe(guide.vector.sign);
    expect(verifyRsa2(guide.vector.canonical!, guide.vector.sign, fixture('merchant-public.pem'))).toBe(true);
    expect(runShell(guide.run.sign!)).toBe(guide.vector.sign);
    expect(runShell(guide.run.verify!).trim()).toBe('Verified OK');
  });

  it('ciphertexts made by the openssl commands decrypt with the platform’s decryptField', async () => {
    const keys = platformExampleKeys();
    for (const name of ['encrypt-oaep-sha256', 'encrypt-pkcs1']) {
      const ciphertext = runShell(guide.run[name]!);
      expect(ciphertext).toMatch(/^[A-Za-z0-9+/]+={0,2}$/);
      expect(decryptField(keys, 'holder_name', ciphertext, holderNameOf)).toBe('Sokha Chan');
    }
    const sourceOfFunds = runShell(guide.run['encrypt-source-of-funds']!);
    expect(JSON.parse(decryptField(keys, 'sourceOfFunds', sourceOfFunds, (plaintext) => plaintext))).toEqual(JSON.parse(guide.vector.sourceOfFunds!));
  });

  it('the shown ciphertexts decrypt (platform and openssl) and a wrong key is the one documented error', async () => {
    const keys = platformExampleKeys();
    expect(decryptField(keys, 'holder_name', guide.vector['oaep-sha256'], holderNameOf)).toBe('Sokha Chan');
    expect(decryptField(keys, 'holder_name', fixture('holder_name.pkcs1.txt'), holderNameOf)).toBe('Sokha Chan');
    expect(runShell(guide.run['decrypt-pkcs1']!)).toBe('Sokha Chan');
    const merchantKeyPem = fixture('merchant-private.pem');
    const wrongKey = { privateKeyPem: merchantKeyPem, privateKey: createPrivateKey(merchantKeyPem) };
    expect(tryDecryptField(wrongKey, guide.vector['oaep-sha256'], holderNameOf)).toBeUndefined();
    let thrown: unknown;
    try {
      decryptField(wrongKey, 'holder_name', guide.vector['oaep-sha256'], holderNameOf);
    } catch (error) {
      thrown = error;
    }
    expect(renderFieldProblems((thrown as { fields: Record<string, string[]> }).fields)).toEqual({ holder_name: ['The holder_name could not be decrypted.'] });
    expect(read('docs/signing-area-c.md')).toContain('The holder_name could not be decrypted.');
  });

  it('its refused values and login errors are the platform’s, and its ambiguity example is one', () => {
    const markdown = read('docs/signing-area-c.md');
    const rendered = renderFieldProblems({
      note: [problem('separator_in_value')],
      'a=b': [problem('separator_in_name')],
      timestamp: [problem('timestamp_window', 300)],
    });
    for (const [field, [message]] of Object.entries(rendered)) expect(markdown).toContain(JSON.stringify({ [field]: [message] }));
    for (const code of ['integer', 'login_replayed'] as const) {
      expect(markdown).toContain(JSON.stringify(renderFieldProblems({ timestamp: [problem(code)] })));
    }
    // The documented login has no timestamp: the guide never says one is required (docs/compatibility.md).
    expect(markdown).not.toContain(JSON.stringify(renderFieldProblems({ timestamp: [problem('required')] })));
    const smuggled = JSON.parse('{"note":"a=1&o=2"}');
    expect(canonicalQueryString(smuggled)).toBe(canonicalQueryString({ note: 'a=1', o: '2' }));
    expect(ambiguousParameters(smuggled)).toEqual(['note']);
    expect(markdown).toContain('{"note":"a=1&o=2"}');
  });
});

describe('docs/webhooks.md', () => {
  const markdown = read('docs/webhooks.md');
  const guide = markedBlocks(markdown);

  it('the body is what the platform sends for that payin, with its webhook id', () => {
    const payin: PayinRow = {
      invoice_reference: 'PAYIN-7K2M9Q4X8B1N5R3T6W0Y',
      merchant_id: 'M7Q2M9X4K8B1N5R3',
      out_trade_no: 'ORDER-1001',
      amount_units: 25_500_000n,
      paid_amount_units: 20_000_000n,
      fee_units: 200_000n,
      payin_fee_percent: '1.0',
      currency: 'USDT',
      memo: null,
      status: 'success',
      late: false,
      payment_match_status: 'underpaid',
      trx_ref: '9f1c2ab34e7d5b8a0c6e4f2d1b3a5c7e9f0d2b4a6c8e0f1a3b5c7d9e1f2a4b6c',
      qr_content: null,
      created_at: new Date('2026-11-22T10:00:00Z'),
    };
    expect(webhookBody(payin, 'payin.success')).toBe(guide.vector.body);
    expect(markdown).toContain(`X-Webhook-Id: ${webhookIdOf(payin.invoice_reference, 'payin.success')}`);
  });

  it('the signature is the platform’s HMAC and openssl’s', () => {
    expect(hmacSha256Hex(guide.vector.secret!, guide.vector.body!)).toBe(guide.vector.signature);
    expect(verifyHmacSha256Hex(guide.vector.secret!, guide.vector.body!, guide.vector.signature)).toBe(true);
    expect(guide.run.hmac).toContain(guide.vector.body);
    expect(guide.run.hmac).toContain(guide.vector.secret);
    expect(runShell(guide.run.hmac!).trim()).toBe(guide.vector.signature);
  });

  it('the retry table follows the rule with the default settings (5 s, ×2, cap 3600 s, window 259200 s)', () => {
    // The rule of workflows/webhook-delivery.ts: wait, doubling, capped; stop when the next wait would pass the window.
    const rows: Array<{ attempt: number; wait: number; at: number }> = [{ attempt: 1, wait: 0, at: 0 }];
    let waited = 0;
    let delay: number | undefined;
    for (;;) {
      delay = delay === undefined ? 5 : Math.min(delay * 2, 3600);
      if (waited + delay > 259_200) break;
      waited += delay;
      rows.push({ attempt: rows.length + 1, wait: delay, at: waited });
    }
    const table = guide.vector.schedule ?? markdown.split('<!-- vector:schedule -->\n')[1]!.split('\n\n')[0]!;
    const lines = table.split('\n').slice(2);
    for (const row of rows.slice(0, 11)) {
      expect(lines[row.attempt - 1]).toBe(`| ${row.attempt} | ${row.wait ? `${row.wait} s` : '—'} | ${row.at} s |`);
    }
    const last = rows[rows.length - 1]!;
    expect(lines[11]).toBe(`| 12 … ${last.attempt} | 3600 s each | ${rows[11]!.at} s … ${last.at} s |`);
    expect(markdown).toContain(`tried ${last.attempt} times over about ${(last.at / 3600).toFixed(1)} hours`);
  });
});

describe('docs/signing-area-a.md openssl commands', () => {
  it('reproduce the request signature and verify both examples', () => {
    const markdown = read('docs/signing-area-a.md');
    const scripts = [...markdown.matchAll(/```sh\n([\s\S]*?)\n```/g)].map((match) => match[1]!);
    expect(scripts).toHaveLength(3);
    const output = runShell(scripts.join('\necho\n')).split('\n');
    expect(output[0]).toBe(read('test/fixtures/area-a/request.sign.txt').trim());
    expect(markdown).toContain(output[0]);
    expect(output.filter((line) => line === 'Verified OK')).toHaveLength(2);
  });
});
