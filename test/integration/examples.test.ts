/**
 * Keeps the sample clients in examples/ honest: what they sign, encrypt and verify is checked against the
 * platform's own implementations in src/crypto (and the HTML pages of src/deposits), in both directions.
 *
 * The examples are plain ES modules with no dependency; jest runs CommonJS, so each check runs them in a child
 * `node --input-type=module` process that reads its input as JSON on stdin and prints its answer as JSON.
 */
import { execFile, execFileSync } from 'node:child_process';
import { generateKeyPairSync, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { numberOwnerEvents, recordEvent, type EventOwner } from '../../src/events';
import { createMerchant } from '../../src/onboarding';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { hmacSha256Hex } from '../../src/crypto/hmac';
import { tryDecryptField } from '../../src/crypto/field-decryption';
import { holderNameOf, normalizeCardNumber } from '../../src/instruments/store';
import { canonicalJson, canonicalQueryString, signBody, signRequestParameters, verifyBody, verifyRsa2 } from '../../src/crypto/rsa2';
import { confirmationPage, resultPage } from '../../rest-facade/views/deposit-pages';

const ROOT = path.resolve(__dirname, '../..');
const EXAMPLES = {
  partner: pathToFileURL(path.join(ROOT, 'examples/partner-client.mjs')).href,
  payin: pathToFileURL(path.join(ROOT, 'examples/payin-merchant.mjs')).href,
  wallet: pathToFileURL(path.join(ROOT, 'examples/wallet-merchant.mjs')).href,
  events: pathToFileURL(path.join(ROOT, 'examples/events-client.mjs')).href,
};
const FIXTURES = path.join(ROOT, 'test/fixtures/area-a');
const fixture = (name: string) => readFileSync(path.join(FIXTURES, name), 'utf8');

/**
 * Runs `body` (the inside of an async ES module function with `input`, `partner`, `payin` and `wallet` in scope:
 * the three example modules) in a child node process and returns what it returns.
 */
function runExamples<T>(body: string, input: unknown): T {
  const program = `
    import { readFileSync } from 'node:fs';
    const input = JSON.parse(readFileSync(0, 'utf8'));
    const partner = await import(${JSON.stringify(EXAMPLES.partner)});
    const payin = await import(${JSON.stringify(EXAMPLES.payin)});
    const wallet = await import(${JSON.stringify(EXAMPLES.wallet)});
    const output = await (async () => { ${body} })();
    process.stdout.write(JSON.stringify(output));
  `;
  const stdout = execFileSync(process.execPath, ['--input-type=module', '-e', program], { input: JSON.stringify(input), encoding: 'utf8', timeout: 30_000 });
  return JSON.parse(stdout) as T;
}

function keyPair(): { privatePem: string; publicPem: string; privateKey: KeyObject; publicKey: KeyObject } {
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privatePem: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    publicPem: pair.publicKey.export({ type: 'spki', format: 'pem' }) as string,
    privateKey: pair.privateKey,
    publicKey: pair.publicKey,
  };
}

const partnerKeys = keyPair();
const platformKeys = keyPair();

describe('examples/partner-client.mjs (Area A, RSA2 over canonical JSON)', () => {
  it('reproduces the worked example of docs/signing-area-a.md byte for byte', () => {
    const answer = runExamples<{ canonical: string; sign: string; responseCanonical: string; responseVerified: boolean }>(
      `const body = JSON.parse(input.request);
       const response = { ...JSON.parse(input.response), sign_type: 'RSA2', sign: input.responseSign };
       return {
         canonical: partner.canonicalJson(body),
         sign: partner.signRequest(body, input.partnerPrivate).sign,
         responseCanonical: partner.canonicalJson(response),
         responseVerified: partner.verifyResponse(response, input.platformPublic),
       };`,
      {
        request: fixture('request.json'),
        response: fixture('response.json'),
        responseSign: fixture('response.sign.txt').trim(),
        partnerPrivate: fixture('partner-private.pem'),
        platformPublic: fixture('platform-example-public.pem'),
      },
    );
    expect(answer.canonical).toBe(fixture('request.canonical.txt'));
    expect(answer.sign).toBe(fixture('request.sign.txt').trim());
    expect(answer.responseCanonical).toBe(fixture('response.canonical.txt'));
    expect(answer.responseVerified).toBe(true);
  });

  it('signs requests the platform verifies, and verifies what the platform signs', () => {
    const body = {
      service: 'create.unified.fundTransfer',
      out_trade_no: 'ORD-X1',
      receiver_id: '+85512000001',
      sender_name: 'Chan / ចាន់ "quoted" \\ back',
      amount: 12.5,
      currency: 'USD',
      nested: { z: [3, { b: 1, a: 2 }], a: null, m: true },
    };
    const platformSigned = signBody({ success: true, code: 200, message: 'OK', data: { b: 1, a: 'x/y', amount: 0.1 } }, platformKeys.privateKey);
    const answer = runExamples<{ signed: Record<string, unknown>; canonical: string; verified: boolean; tampered: boolean; garbage: boolean; missing: boolean; wrongKey: boolean }>(
      `const signed = partner.signRequest(input.body, input.partnerPrivate);
       return {
         signed,
         canonical: partner.canonicalJson(input.body),
         verified: partner.verifyResponse(input.platformSigned, input.platformPublic),
         tampered: partner.verifyResponse({ ...input.platformSigned, data: { ...input.platformSigned.data, amount: 1 } }, input.platformPublic),
         garbage: partner.verifyResponse({ ...input.platformSigned, sign: 'bm90IGEgc2lnbmF0dXJl' }, input.platformPublic),
         missing: partner.verifyResponse({ ...input.platformSigned, sign: undefined }, input.platformPublic),
         wrongKey: partner.verifyResponse(input.platformSigned, input.partnerPublic),
       };`,
      { body, partnerPrivate: partnerKeys.privatePem, partnerPublic: partnerKeys.publicPem, platformPublic: platformKeys.publicPem, platformSigned },
    );
    expect(answer.canonical).toBe(canonicalJson(body));
    expect(answer.signed.sign_type).toBe('RSA2');
    expect(verifyBody(answer.signed, partnerKeys.publicKey)).toBe(true);
    expect(verifyBody({ ...answer.signed, amount: 12.51 }, partnerKeys.publicKey)).toBe(false);
    expect(answer).toMatchObject({ verified: true, tampered: false, garbage: false, missing: false, wrongKey: false });
  });
});

describe('examples/wallet-merchant.mjs (Area C, RSA2 over the §7 query string, encrypted fields)', () => {
  const body = {
    service: 'transfer',
    from_user_id: '12',
    to_user_id: 13,
    amount: 10.5,
    currency: 'USD',
    memo: '',
    note: null,
    flag: true,
    zero: 0,
    items: [1, 'a'],
    meta: { b: 2, a: 'x/y & z=1' },
    text: 'a b&c=d ចាន់',
  };

  it('builds the platform canonical string and signs what the platform verifies; verifies what the platform signs', () => {
    const platformSigned = signRequestParameters(body, partnerKeys.privateKey);
    const answer = runExamples<{ canonical: string; signed: Record<string, unknown> & { sign: string }; canonicalOfPlatformSigned: string }>(
      `return {
         canonical: wallet.canonicalQueryString(input.body),
         signed: wallet.signParameters(input.body, input.privatePem),
         canonicalOfPlatformSigned: wallet.canonicalQueryString(input.platformSigned),
       };`,
      { body, privatePem: partnerKeys.privatePem, platformSigned },
    );
    expect(answer.canonical).toBe(canonicalQueryString(body));
    expect(answer.canonical).toBe('amount=10.5&currency=USD&flag=true&from_user_id=12&items=[[1,"a"]]&meta=[{"b":2,"a":"x/y & z=1"}]&service=transfer&text=a b&c=d ចាន់&to_user_id=13&zero=0');
    expect(verifyRsa2(canonicalQueryString(answer.signed), answer.signed.sign, partnerKeys.publicKey)).toBe(true);
    expect(verifyRsa2(canonicalQueryString({ ...answer.signed, amount: 10.51 }), answer.signed.sign, partnerKeys.publicKey)).toBe(false);
    expect(answer.canonicalOfPlatformSigned).toBe(canonicalQueryString(platformSigned));
    expect(cryptoVerify('sha256', Buffer.from(answer.canonicalOfPlatformSigned), partnerKeys.publicKey, Buffer.from(platformSigned.sign, 'base64'))).toBe(true);
  });

  it('encrypts fields the platform decrypts, with OAEP-SHA256, OAEP-SHA1 and PKCS#1 v1.5', async () => {
    const sourceOfFunds = { type: 'CARD', provided: { card: { number: '4242424242424242', securityCode: '123', expiry: { month: '12', year: '30' } } } };
    const answer = runExamples<Record<string, string>>(
      `const out = {};
       for (const padding of ['oaep-sha256', 'oaep-sha1', 'pkcs1']) out[padding] = wallet.encryptField('SREY MOM ស្រី', input.publicPem, { padding });
       out.defaultPadding = wallet.encryptField('4242424242424242', input.publicPem);
       out.sourceOfFunds = wallet.encryptField(input.sourceOfFunds, input.publicPem, { padding: 'pkcs1' });
       out.otherKey = wallet.encryptField('SREY MOM', input.otherPublicPem);
       return out;`,
      { publicPem: platformKeys.publicPem, otherPublicPem: partnerKeys.publicPem, sourceOfFunds },
    );
    const keys = { privateKey: platformKeys.privateKey };
    const plaintext = (text: string) => text;
    for (const padding of ['oaep-sha256', 'oaep-sha1', 'pkcs1']) expect(tryDecryptField(keys, answer[padding], holderNameOf)).toBe('SREY MOM ស្រី');
    expect(tryDecryptField(keys, answer.defaultPadding, normalizeCardNumber)).toBe('4242424242424242');
    expect(JSON.parse(tryDecryptField(keys, answer.sourceOfFunds, plaintext) ?? 'null')).toEqual(sourceOfFunds);
    // Under another key the field never opens to its plaintext (PKCS#1 v1.5 implicit rejection yields a synthetic one).
    expect(tryDecryptField(keys, answer.otherKey, (text) => (text === 'SREY MOM' ? text : undefined))).toBeUndefined();
  });

  it('reads the platform confirmation page form and the result of both the redirect and the hidden input', () => {
    const result = { success: true, code: 200, message: 'OK', data: { transaction_ref: 'DEP123' } };
    const resultBase64 = Buffer.from(JSON.stringify(result)).toString('base64');
    const confirmation = confirmationPage({
      actionUrl: 'http://127.0.0.1:3000/visa-master/confirm/dtk_abc?x=1&y="2"',
      merchantName: 'Demo <Merchant> & Co',
      description: 'Order "7"',
      amount: '9.99',
      currency: 'USD',
      brand: 'visa',
      last4: '4242',
      holderName: 'SREY MOM',
      reference: 'DEP123',
    });
    const answer = runExamples<{ form: { action: string; method: string }; hidden: unknown; decoded: unknown }>(
      `return {
         form: wallet.readForm(input.confirmation),
         hidden: wallet.decodeConfirmationResult(wallet.readHiddenInput(input.resultHtml, 'result')),
         decoded: wallet.decodeConfirmationResult(new URL(input.redirect).searchParams.get('result')),
       };`,
      {
        confirmation,
        resultHtml: resultPage({ success: true, message: 'OK', reference: 'DEP123', resultBase64 }),
        redirect: `http://shop.example/return?order=1&result=${encodeURIComponent(resultBase64)}`,
      },
    );
    expect(answer.form).toMatchObject({ action: 'http://127.0.0.1:3000/visa-master/confirm/dtk_abc?x=1&y="2"', method: 'POST' });
    expect(answer.hidden).toEqual(result);
    expect(answer.decoded).toEqual(result);
  });
});

describe('examples/payin-merchant.mjs (Area B webhooks, HMAC-SHA256)', () => {
  const secret = 'f'.repeat(8) + '0123456789abcdef'.repeat(3);
  const raw = '{"success":true,"code":200,"event":"payin.success","data":{"amount":10.50,"out_trade_no":"A/1","memo":"ចាន់"}}';

  it('computes and checks the same signature as the platform, in constant time, rejecting anything else', () => {
    const platformSignature = hmacSha256Hex(secret, raw);
    const answer = runExamples<Record<string, unknown>>(
      `const { webhookSignature, verifyWebhookSignature } = payin;
       return {
         signature: webhookSignature(input.raw, input.secret),
         bytes: webhookSignature(Buffer.from(input.raw, 'utf8'), input.secret),
         ok: verifyWebhookSignature(input.raw, input.platformSignature, input.secret),
         upper: verifyWebhookSignature(input.raw, input.platformSignature.toUpperCase(), input.secret),
         reserialized: verifyWebhookSignature(JSON.stringify(JSON.parse(input.raw)), input.platformSignature, input.secret),
         wrongSecret: verifyWebhookSignature(input.raw, input.platformSignature, input.secret + 'x'),
         truncated: verifyWebhookSignature(input.raw, input.platformSignature.slice(0, 62), input.secret),
         notHex: verifyWebhookSignature(input.raw, 'z'.repeat(64), input.secret),
         missing: verifyWebhookSignature(input.raw, undefined, input.secret),
       };`,
      { raw, secret, platformSignature },
    );
    expect(answer).toEqual({
      signature: platformSignature,
      bytes: platformSignature,
      ok: true,
      upper: true,
      reserialized: false, // the raw bytes are signed: 10.50 re-serialized is 10.5
      wrongSecret: false,
      truncated: false,
      notHex: false,
      missing: false,
    });
  });

  it('receives webhooks under a custom signature header: 200 once per X-Webhook-Id, 401 otherwise', () => {
    const answer = runExamples<{ statuses: number[]; handled: Array<{ id: string; event: string; attempt: number }> }>(
      `const receiver = await payin.startWebhookReceiver({ callbackUrl: 'http://127.0.0.1:0/hooks/payins', hmacSecret: input.secret, signatureHeader: 'X-Acme-Signature' });
       const post = (headers, body = input.raw, url = receiver.url) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body }).then((r) => r.status);
       const good = { 'x-acme-signature': input.signature, 'x-webhook-id': 'WH-1', 'x-webhook-event': 'payin.success', 'x-webhook-attempt': '1' };
       const statuses = [
         await post(good),
         await post({ ...good, 'x-webhook-attempt': '2' }),
         await post({ 'x-signature': input.signature, 'x-webhook-id': 'WH-2' }),
         await post({ ...good, 'x-webhook-id': 'WH-3' }, input.raw.replace('10.50', '99.50')),
         await post(good, input.raw, receiver.url.replace('/hooks/payins', '/elsewhere')),
       ];
       await receiver.waitFor((w) => w.id === 'WH-1', 2000);
       await receiver.close();
       return { statuses, handled: receiver.received.map(({ id, event, attempt }) => ({ id, event, attempt })) };`,
      { raw, secret, signature: hmacSha256Hex(secret, raw) },
    );
    expect(answer.statuses).toEqual([200, 200, 401, 401, 404]);
    expect(answer.handled).toEqual([{ id: 'WH-1', event: 'payin.success', attempt: 1 }]);
  });
});

describe('examples/events-client.mjs (Area B, the event stream) against a running platform', () => {
  let platform: TestPlatform;
  let apiKey: string;
  let owner: EventOwner;
  let directory: string;
  const run = promisify(execFile);

  beforeAll(async () => {
    platform = await startTestPlatform({ roles: ['api', 'facade'] });
    const { merchant, credentials } = await createMerchant(platform.deps, { name: 'Events client', callback_url: 'https://merchant.example/hook' });
    owner = { type: 'merchant', id: merchant.id };
    apiKey = credentials.api_key;
    directory = mkdtempSync(path.join(tmpdir(), 'events-client-'));
  });
  afterAll(async () => {
    rmSync(directory, { recursive: true, force: true });
    await platform?.stop();
  });

  /** The merchant's next `count` events (written as the flows write them: one transaction each), numbered. */
  const write = async (count: number) => {
    for (let index = 0; index < count; index += 1) {
      await platform.deps.database.transaction((trx) => recordEvent(trx, { owner, subject: `PAYIN-CLIENT${index}`, type: 'payin.created', data: { index } }));
    }
    // Numbered after their commits (docs/events.md): done here, so the test can name them by seq at once.
    await numberOwnerEvents(platform.deps.database, owner);
  };
  /** Runs `body` in a child node process with the events client as `events` (the platform answers meanwhile). */
  const runClient = async <T>(body: string, input: Record<string, unknown>): Promise<T> => {
    const program = `
      import { readFileSync } from 'node:fs';
      const input = JSON.parse(process.env.EXAMPLE_INPUT);
      const events = await import(${JSON.stringify(EXAMPLES.events)});
      const output = await (async () => { ${body} })();
      process.stdout.write(JSON.stringify(output));
    `;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', program], { env: { ...process.env, EXAMPLE_INPUT: JSON.stringify({ baseUrl: platform.facadeUrl, apiKey, ...input }) }, timeout: 30_000 });
    return JSON.parse(stdout) as T;
  };
  const catchUp = (cursorFile: string) =>
    runClient<{ result: { after: number; events: number }; seen: number[]; gaps: number[][]; stored: { after: number } }>(
      `const seen = [];
       const gaps = [];
       const result = await events.catchUp({ baseUrl: input.baseUrl, apiKey: input.apiKey, cursor: events.fileCursor(input.cursorFile), limit: 3,
         onEvent: (event) => seen.push(event.seq), onGap: (from, to) => gaps.push([from, to]) });
       return { result, seen, gaps, stored: JSON.parse(readFileSync(input.cursorFile, 'utf8')) };`,
      { cursorFile },
    );

  it('catches up from after=0 page by page, stores next_after, and next time reads only what came after', async () => {
    await write(7);
    const cursorFile = path.join(directory, 'cursor.json');
    const first = await catchUp(cursorFile);
    expect(first).toEqual({ result: { after: 7, events: 7 }, seen: [1, 2, 3, 4, 5, 6, 7], gaps: [], stored: { after: 7 } });
    await write(2);
    const second = await catchUp(cursorFile);
    expect(second).toEqual({ result: { after: 9, events: 2 }, seen: [8, 9], gaps: [], stored: { after: 9 } });
    expect(await catchUp(cursorFile)).toEqual({ result: { after: 9, events: 0 }, seen: [], gaps: [], stored: { after: 9 } });
  });

  it('reports the events it can no longer read (past retention) and goes on', async () => {
    const cursorFile = path.join(directory, 'gap.json');
    await catchUp(cursorFile);
    await write(3);
    await platform.deps.database('events').where({ owner_type: owner.type, owner_id: owner.id }).whereIn('seq', [10, 11]).delete();
    expect(await catchUp(cursorFile)).toEqual({ result: { after: 12, events: 1 }, seen: [12], gaps: [[10, 11]], stored: { after: 12 } });
  });

  it('runs alone: catches up once from its cursor file and prints each event', async () => {
    const cursorFile = path.join(directory, 'cli.json');
    const { stdout } = await run(process.execPath, [path.join(ROOT, 'examples/events-client.mjs'), '--once', '--cursor-file', cursorFile], {
      env: { ...process.env, MERCHANT_API_KEY: apiKey, BASE_URL: platform.facadeUrl },
      timeout: 30_000,
    });
    const lines = stdout.trim().split('\n');
    // Events 1 … 12 but 10 and 11 (deleted above, as retention would): ten printed, the gap reported.
    expect(lines.at(-1)).toBe('caught up: 10 event(s), cursor 12');
    expect(lines).toContain('events 10..11 are past retention: rebuild those payments from their status');
    expect(lines[0]!.split('\t').slice(0, 4)).toEqual(['1', expect.any(String), 'payin.created', 'PAYIN-CLIENT0']);
    expect(JSON.parse(readFileSync(cursorFile, 'utf8'))).toEqual({ after: 12 });
  });

  it('stops with the platform’s message on a refused key', async () => {
    const refused = await run(process.execPath, [path.join(ROOT, 'examples/events-client.mjs'), '--once'], {
      env: { ...process.env, MERCHANT_API_KEY: 'not-a-key', BASE_URL: platform.facadeUrl },
      timeout: 30_000,
    }).catch((error: { code: number; stderr: string }) => error);
    expect(refused).toMatchObject({ code: 1, stderr: 'events-client: events: HTTP 401 Unauthenticated. Please provide valid credentials.\n' });
  });
});

describe('examples stay outside clients', () => {
  it('import nothing but node: built-ins', () => {
    for (const file of ['partner-client.mjs', 'payin-merchant.mjs', 'wallet-merchant.mjs', 'events-client.mjs']) {
      const source = readFileSync(path.join(ROOT, 'examples', file), 'utf8');
      const imports = [...source.matchAll(/^\s*import\s[^'"]*['"]([^'"]+)['"]/gm)].map((match) => match[1]);
      expect(imports.length).toBeGreaterThan(0);
      for (const specifier of imports) expect(specifier).toMatch(/^node:/);
      // Dynamic imports and require() (JSDoc `import('node:…')` types aside) would bypass the check above.
      expect(source.replace(/import\('node:[a-z]+'\)/g, '')).not.toMatch(/\bimport\(|\brequire\(/);
    }
  });
});
