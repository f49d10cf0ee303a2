/**
 * A payment's timeline (docs/timeline.md) against real PostgreSQL and Temporal over HTTP and the RPC port: a payin
 * whose first webhook attempt fails (the merchant's receiver answers 500 once) tells, in order and under its one
 * reference, the request that created it, its workflow's start, the upstream's notification, the settlement's
 * postings, attempt 1 (failed, with its status code) and attempt 2 (delivered). Owners see only their own payments
 * (unknown and another's answer the same 404 / NOT_FOUND); operators see any; a workflow history gone from Temporal is
 * said so while the rest is still shown. The request journal records each request once answered.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { hmacSha256Hex } from '../../src/crypto/hmac';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { createPartner, createUser } from '../../src/onboarding';
import { createPlatformClients } from '../../src/rpc/clients';
import { createServiceCredential } from '../../src/service-credentials';
import { generatePartnerKeys, PartnerClient } from '../support/partner-client';
import { eventually, post, startPayinHarness, UPSTREAM_WEBHOOK_SECRET, type PayinHarness } from '../support/payin-setup';

interface Entry {
  at: string;
  source: string;
  kind: string;
  summary: string;
  details: Record<string, unknown>;
  link: string | null;
}

describe('a payment’s timeline', () => {
  let harness: PayinHarness;
  let merchant: MerchantCredentials;
  let other: MerchantCredentials;
  let settled: string;
  let orders = 0;

  const createPayin = async (key: string, amount = 3): Promise<string> => {
    const response = await post(harness.platform.facadeUrl, '/api/v1/payins', JSON.stringify({ amount, out_trade_no: `TL-${++orders}-${Date.now()}` }), {
      'X-API-Key': key,
      'Idempotency-Key': `tl-key-${orders}`,
    });
    expect(response.status).toBe(200);
    return response.json.data.invoice_reference as string;
  };
  const notify = async (invoice_reference: string, amount: number, trx_ref: string) => {
    const text = JSON.stringify({ currency: 'USDT', invoice_reference, status: 'success', amount, trx_ref });
    const answer = await post(harness.platform.facadeUrl, '/api/v1/upstream/notifications', text, { 'X-Upstream-Signature': hmacSha256Hex(UPSTREAM_WEBHOOK_SECRET, text) });
    expect(answer.json.data).toMatchObject({ invoice_reference, applied: true });
  };
  const timeline = async (reference: string, key?: string) => {
    const response = await fetch(`${harness.platform.facadeUrl}/api/v1/payments/${encodeURIComponent(reference)}/timeline`, { headers: key ? { 'X-API-Key': key } : {} });
    return { status: response.status, json: (await response.json()) as { success: boolean; message?: string; data: { reference: string; entries: Entry[]; sources: Array<{ source: string; state: string; reason: string }>; truncated: string[] } } };
  };
  const workflowStarted = (reference: string) =>
    eventually(async () => {
      try {
        return (await harness.platform.deps.temporal.client.workflow.getHandle(reference).describe()).runId;
      } catch {
        return undefined;
      }
    });

  beforeAll(async () => {
    harness = await startPayinHarness({ env: { TEMPORAL_UI_URL: 'http://temporal-ui.test:8233' } });
    const { createMerchant } = await import('../../src/onboarding/merchants');
    ({ credentials: merchant } = await createMerchant(harness.platform.deps, { name: 'Timeline merchant', callback_url: harness.receiver.url }));
    ({ credentials: other } = await createMerchant(harness.platform.deps, { name: 'Other merchant', callback_url: harness.receiver.url }));
    harness.receiver.configure({ hmac_secret: merchant.hmac_secret, signature_header: merchant.signature_header });
  });
  afterAll(() => harness.stop());

  it('tells a settled payin in order: request, workflow start, notification, postings, webhook attempt 1 failed, attempt 2 delivered', async () => {
    settled = await createPayin(merchant.api_key);
    const webhookId = `WH-${settled.replace(/^PAYIN-/, '')}-SUCCESS`;
    harness.receiver.configure({ fail_when: (webhook_id, count) => webhook_id === webhookId && count === 1 });
    try {
      await workflowStarted(settled);
      await notify(settled, 3, 'TRX-TIMELINE');
      await harness.receiver.waitFor((received) => received.some((item) => item.webhook_id === webhookId && item.status === 200), 60_000);
    } finally {
      harness.receiver.configure({ fail_when: null });
    }
    await eventually(async () => (await harness.platform.deps.database('webhook_delivery_attempts').where({ webhook_id: webhookId, status_code: 200 }).first()) ?? undefined);

    const { status, json } = await timeline(settled, merchant.api_key);
    expect(status).toBe(200);
    expect(json.success).toBe(true);
    const { entries, sources } = json.data;
    expect(json.data.reference).toBe(settled);
    expect(sources).toEqual([]);
    // Time order throughout.
    expect(entries.map((entry) => entry.at)).toEqual([...entries.map((entry) => entry.at)].sort());

    const index = (predicate: (entry: Entry) => boolean, what: string) => {
      const found = entries.findIndex(predicate);
      if (found < 0) throw new Error(`no ${what} in ${entries.map((entry) => `${entry.source}:${entry.kind}`).join(', ')}`);
      return found;
    };
    const request = index((entry) => entry.kind === 'request.area-b.create_payin', 'create request');
    const started = index((entry) => entry.kind === 'workflow.started', 'workflow start');
    const notification = index((entry) => entry.kind === 'provider.notification', 'notification');
    const posting = index((entry) => entry.kind === 'ledger.posted', 'posting');
    const attempt1 = index((entry) => entry.kind === 'webhook.failed', 'failed attempt');
    const attempt2 = index((entry) => entry.kind === 'webhook.delivered', 'delivered attempt');
    expect([request, started, notification, posting, attempt1, attempt2]).toEqual([...[request, started, notification, posting, attempt1, attempt2]].sort((a, b) => a - b));
    expect(new Set([request, started, notification, posting, attempt1, attempt2]).size).toBe(6);

    expect(entries[request]).toMatchObject({
      source: 'request',
      details: { action: 'area-b.create_payin', owner_kind: 'merchant', owner_id: merchant.merchant_id, idempotency_key: `tl-key-${orders}`, outcome: 'ok' },
    });
    expect(entries.some((entry) => entry.kind === 'request.area-b.upstream_notification' && entry.details.owner_kind === 'upstream' && entry.details.outcome === 'ok')).toBe(true);
    // The workflow carries the payment's search attributes from its start.
    expect(entries[started]).toMatchObject({
      source: 'workflow',
      details: {
        workflow_type: 'payinWorkflow',
        search_attributes: { PaymentOwnerId: `merchant:${merchant.merchant_id}`, PaymentKind: 'payin', PaymentAmountUnits: '3000000', PaymentCurrency: 'USDT', PaymentStatus: 'waiting' },
      },
    });
    expect(entries[started]!.link).toMatch(new RegExp(`^http://temporal-ui\\.test:8233/namespaces/[^/]+/workflows/${settled}/`));
    expect(entries[notification]).toMatchObject({ source: 'provider', details: { status: 'success', amount_units: '3000000', trx_ref: 'TRX-TIMELINE', outcome: 'applied' } });
    // The merchant sees its own account's balance after the posting, never the platform's.
    const postings = entries[posting]!.details.postings as Array<{ account: { owner_type: string; id?: string }; amount_units: string; balance_after_units: string | null }>;
    const own = postings.filter((line) => line.account.owner_type === 'merchant');
    expect(own.length).toBeGreaterThan(0);
    expect(own.every((line) => line.balance_after_units !== null && line.account.id)).toBe(true);
    const others = postings.filter((line) => line.account.owner_type !== 'merchant');
    expect(others.length).toBeGreaterThan(0);
    expect(others.every((line) => line.balance_after_units === null && line.account.id === undefined)).toBe(true);
    expect(postings.reduce((sum, line) => sum + BigInt(line.amount_units), 0n)).toBe(0n);

    expect(entries[attempt1]).toMatchObject({ source: 'webhook', details: { webhook_id: webhookId, attempt: 1, status_code: 500 } });
    expect(entries[attempt1]!.details.next_retry_at).toEqual(expect.any(String));
    expect(entries[attempt1]!.details.latency_ms).toEqual(expect.any(Number));
    expect(entries[attempt2]).toMatchObject({ source: 'webhook', details: { webhook_id: webhookId, attempt: 2, status_code: 200, next_retry_at: null } });
    expect(entries.some((entry) => entry.source === 'event' && entry.kind === 'payin.success')).toBe(true);
    // No secret or raw body reaches the timeline.
    const text = JSON.stringify(json);
    expect(text).not.toContain(merchant.api_key);
    expect(text).not.toContain(merchant.hmac_secret);
  }, 120_000);

  it('shows a payment to its owner only: another merchant’s key and an unknown reference get the same 404', async () => {
    const foreign = await timeline(settled, other.api_key);
    const unknown = await timeline('PAYIN-AAAAAAAAAAAAAAAAAAAA', merchant.api_key);
    expect(foreign.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(foreign.json).toEqual(unknown.json);
    expect(foreign.json).toEqual({ success: false, message: 'Payment not found.', errors: null });
    expect((await timeline(settled)).status).toBe(401);
    expect((await timeline(settled, 'not-a-key')).status).toBe(401);
    // A reference out of shape is a field error for a valid key (401 without one).
    expect((await timeline('x'.repeat(129), merchant.api_key)).status).toBe(422);
  });

  it('answers owner-bound credentials for their own payments, operators for any, and refuses the rest', async () => {
    const { database } = harness.platform.deps;
    const code = (call: Promise<unknown>) => call.then(() => 'ok', (error: unknown) => Code[ConnectError.from(error).code]);
    const clientOf = async (scopes: string[]) => createPlatformClients(harness.platform.rpcUrl, { credentials: { token: (await createServiceCredential(database, { name: `timeline ${scopes.join(' ')}`, scopes })).token } }).timeline;
    const bound = await clientOf([`merchant:${merchant.merchant_id}`]);
    const answer = await bound.getPaymentTimeline({ reference: settled, merchantId: merchant.merchant_id });
    expect(answer.entries.length).toBeGreaterThan(5);
    // Its own merchant only; another merchant's credential: the same NOT_FOUND as an unknown reference.
    expect(await code(bound.getPaymentTimeline({ reference: settled, merchantId: other.merchant_id }))).toBe('PermissionDenied');
    const otherBound = await clientOf([`merchant:${other.merchant_id}`]);
    expect(await code(otherBound.getPaymentTimeline({ reference: settled, merchantId: other.merchant_id }))).toBe('NotFound');
    expect(await code(otherBound.getPaymentTimeline({ reference: 'PAYIN-UNKNOWN', merchantId: other.merchant_id }))).toBe('NotFound');
    // The façade's credential without the owner's proof, and a credential naming nobody, are refused.
    expect(await code((await clientOf(['facade'])).getPaymentTimeline({ reference: settled }))).toBe('PermissionDenied');
    expect(await code(bound.getPaymentTimeline({ reference: settled }))).toBe('PermissionDenied');
    // Operators: any payment, every source.
    const operator = await harness.platform.clients.timeline.getPaymentTimeline({ reference: settled });
    expect(operator.entries.map((entry) => entry.source)).toEqual(expect.arrayContaining(['request', 'workflow', 'provider', 'ledger', 'event', 'webhook']));
    const operatorPostings = JSON.parse(operator.entries.find((entry) => entry.kind === 'ledger.posted')!.detailsJson).postings as Array<{ balance_after_units: string | null }>;
    expect(operatorPostings.every((line) => line.balance_after_units !== null)).toBe(true);
    // Bounded per source.
    const cut = await harness.platform.clients.timeline.getPaymentTimeline({ reference: settled, maxPerSource: 1 });
    expect(cut.entries.filter((entry) => entry.source === 'workflow')).toHaveLength(1);
    expect(cut.truncated).toContain('workflow');
  });

  it('prints a payment’s timeline for an operator: payments admin timeline <reference> [--json]', async () => {
    const cli = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [path.resolve(__dirname, '../../bin/payments'), 'admin', 'timeline', ...args],
          { env: { ...process.env, RPC_URL: harness.platform.rpcUrl, LOG_LEVEL: 'silent', PAYMENTS_ADMIN_TOKEN: harness.platform.adminToken, PAYMENTS_ADMIN_CREDENTIALS: '' }, timeout: 60_000 },
          (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
        );
      });
    const asJson = await cli([settled, '--json']);
    expect(asJson).toMatchObject({ code: 0, stderr: '' });
    const printed = JSON.parse(asJson.stdout) as { reference: string; entries: Entry[]; sources: unknown[] };
    expect(printed.reference).toBe(settled);
    expect(printed.entries.map((entry) => entry.source)).toEqual(expect.arrayContaining(['request', 'workflow', 'provider', 'ledger', 'event', 'webhook']));
    const asText = await cli([settled]);
    expect(asText.code).toBe(0);
    expect(asText.stdout.split('\n')[0]).toBe(`timeline of ${settled} (${printed.entries.length} entries)`);
    expect(asText.stdout).toMatch(/webhook\s+webhook\.failed\s+webhook payin\.success attempt 1: HTTP 500/);
    const unknown = await cli(['PAYIN-UNKNOWN0000000000000']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr.trim().split('\n')).toHaveLength(1);
  }, 60_000);

  it('says the workflow history is gone once Temporal forgot it, and still shows the rest', async () => {
    const reference = await createPayin(merchant.api_key, 2);
    await workflowStarted(reference);
    await notify(reference, 2, 'TRX-GONE');
    await eventually(async () => (await harness.platform.deps.database('webhook_delivery_attempts').where('webhook_id', 'like', `WH-${reference.replace(/^PAYIN-/, '')}-%`).first()) ?? undefined, 60_000);
    const { client } = harness.platform.deps.temporal;
    await client.workflowService.deleteWorkflowExecution({ namespace: client.options.namespace, workflowExecution: { workflowId: reference } });
    // Temporal deletes asynchronously (its own system workflow): it can take a while on a busy machine.
    await eventually(async () => {
      try {
        await client.workflow.getHandle(reference).describe();
        return false;
      } catch {
        return true;
      }
    }, 100_000);
    const { status, json } = await timeline(reference, merchant.api_key);
    expect(status).toBe(200);
    expect(json.data.sources).toEqual([{ source: 'workflow', state: 'gone', reason: expect.stringContaining('gone') }]);
    const kinds = json.data.entries.map((entry) => entry.kind);
    expect(kinds).not.toContain('workflow.started');
    expect(kinds).toEqual(expect.arrayContaining(['request.area-b.create_payin', 'provider.notification', 'ledger.posted', 'payin.success']));
    expect(json.data.entries.some((entry) => entry.source === 'webhook')).toBe(true);
  }, 180_000);

  it('answers a partner its own events over the Area A gateway (query.events), and its pre-transfer’s timeline to a credential bound to it', async () => {
    const { deps } = harness.platform;
    const keys = generatePartnerKeys();
    const { partner: created, credentials } = await createPartner(deps, { name: 'Timeline partner', public_key_pem: keys.publicKeyPem, float_units: 100_000n });
    const receiver = await createUser(deps, { phone_number: '012777321', first_name: 'Sok', last_name: 'Dara', currency: 'USD' });
    const partner = new PartnerClient(harness.platform.facadeUrl, credentials, keys, deps.keys.publicKeyPem);
    expect((await partner.token()).status).toBe(200);
    const made = await partner.gateway({ service: 'create.unified.fundTransfer', out_trade_no: `TLPT${Date.now()}`, receiver_id: receiver.id, sender_name: 'Timeline', amount: 1, currency: 'USD' });
    expect(made.body).toMatchObject({ success: true });
    const preTransfer = (made.body.data as { pre_transfer_id: string }).pre_transfer_id;

    const page = await partner.gateway({ service: 'query.events', after: 0, limit: 10 });
    expect(page.status).toBe(200);
    expect(page.signValid).toBe(true);
    const data = page.body.data as { events: Array<{ seq: unknown; type: string; subject: string }>; has_more: boolean; next_after: unknown };
    expect(data.events.map((event) => [String(event.seq), event.type, event.subject])).toEqual([['1', 'pre_transfer.created', preTransfer]]);
    expect([data.has_more, String(data.next_after)]).toEqual([false, '1']);
    const refused = await partner.gateway({ service: 'query.events', limit: 0 });
    expect(refused.body).toMatchObject({ success: false, error_code: 'VALIDATIONERROR', error_desc: 'limit must be at least 1' });

    // The pre-transfer's timeline: the gateway's create journaled under it, for a credential bound to the partner.
    const bound = createPlatformClients(harness.platform.rpcUrl, { credentials: { token: (await createServiceCredential(deps.database, { name: 'timeline partner', scopes: [`partner:${created.id}`] })).token } }).timeline;
    const story = await bound.getPaymentTimeline({ reference: preTransfer, partnerId: created.id });
    const kinds = story.entries.map((entry) => entry.kind);
    expect(kinds).toEqual(expect.arrayContaining(['request.area-a.create_pre_transfer', 'workflow.started', 'ledger.held', 'pre_transfer.created']));
    const request = JSON.parse(story.entries.find((entry) => entry.kind === 'request.area-a.create_pre_transfer')!.detailsJson);
    expect(request).toMatchObject({ owner_kind: 'partner', owner_id: created.id, outcome: 'ok' });
    // Another owner's credential: not found.
    expect(await bound.getPaymentTimeline({ reference: settled, partnerId: created.id }).then(() => 'ok', (error: unknown) => Code[ConnectError.from(error).code])).toBe('NotFound');
  }, 60_000);

  it('never makes a partner an owner of another partner’s pre-transfer by naming it in a refused confirm', async () => {
    const { deps } = harness.platform;
    const partnerOf = async (name: string) => {
      const keys = generatePartnerKeys();
      const { partner, credentials } = await createPartner(deps, { name, public_key_pem: keys.publicKeyPem, float_units: 100_000n });
      const client = new PartnerClient(harness.platform.facadeUrl, credentials, keys, deps.keys.publicKeyPem);
      expect((await client.token()).status).toBe(200);
      const timeline = createPlatformClients(harness.platform.rpcUrl, { credentials: { token: (await createServiceCredential(deps.database, { name: `timeline ${name}`, scopes: [`partner:${partner.id}`] })).token } }).timeline;
      return { partner, client, timeline };
    };
    const a = await partnerOf('Owner partner A');
    const b = await partnerOf('Prying partner B');
    const receiver = await createUser(deps, { phone_number: '012777654', first_name: 'Keo', last_name: 'Sina', currency: 'USD' });
    const made = await a.client.gateway({ service: 'create.unified.fundTransfer', out_trade_no: `TLA${Date.now()}`, receiver_id: receiver.id, sender_name: 'A', amount: 1, currency: 'USD' });
    const preTransfer = (made.body.data as { pre_transfer_id: string }).pre_transfer_id;
    const code = (call: Promise<unknown>) => call.then(() => 'ok', (error: unknown) => Code[ConnectError.from(error).code]);
    expect(await code(b.timeline.getPaymentTimeline({ reference: preTransfer, partnerId: b.partner.id }))).toBe('NotFound');

    // B names A's pre-transfer in a confirm: refused as unknown to B.
    const refused = await b.client.gateway({ service: 'confirm.fundTransfer', partner_transaction_id: `PB${Date.now()}`, pre_transfer_id: preTransfer });
    expect(refused.body).toMatchObject({ success: false, error_code: 'NOTEXIST' });

    // Still unknown to B, with nothing of A's in the answer; A's own timeline shows no request of B's.
    expect(await code(b.timeline.getPaymentTimeline({ reference: preTransfer, partnerId: b.partner.id }))).toBe('NotFound');
    const story = await a.timeline.getPaymentTimeline({ reference: preTransfer, partnerId: a.partner.id });
    const requesters = story.entries.filter((entry) => entry.source === 'request').map((entry) => JSON.parse(entry.detailsJson).owner_id as string);
    expect(requesters).not.toContain(b.partner.id);
    // The refusal is journaled under its caller, never filed under the payment it named.
    const filed = await deps.database('payment_requests').where({ reference: preTransfer, owner_id: b.partner.id });
    expect(filed).toEqual([]);
    const attempts = await deps.database('payment_requests').where({ owner_kind: 'partner', owner_id: b.partner.id, action: 'area-a.confirm_pre_transfer' });
    expect(attempts.map((row) => [row.reference, row.outcome])).toEqual([[null, 'PRE_TRANSFER_NOT_FOUND']]);
    // Operators still see who tried: the attempt is shown in the named payment's timeline to them only.
    const operator = await harness.platform.clients.timeline.getPaymentTimeline({ reference: preTransfer });
    expect(operator.entries.some((entry) => entry.kind === 'request.area-a.confirm_pre_transfer' && JSON.parse(entry.detailsJson).owner_id === b.partner.id)).toBe(true);

    // The owner's own refusal is filed under its payment: A confirms, then confirms again (USED).
    const transaction = `PA${Date.now()}`;
    expect((await a.client.gateway({ service: 'confirm.fundTransfer', partner_transaction_id: transaction, pre_transfer_id: preTransfer })).body).toMatchObject({ success: true });
    expect((await a.client.gateway({ service: 'confirm.fundTransfer', partner_transaction_id: `${transaction}X`, pre_transfer_id: preTransfer })).body).toMatchObject({ error_code: 'USED' });
    const own = await deps.database('payment_requests').where({ reference: preTransfer, action: 'area-a.confirm_pre_transfer' }).orderBy('id');
    expect(own.map((row) => [row.owner_id, row.outcome])).toEqual([
      [a.partner.id, 'ok'],
      [a.partner.id, 'PRE_TRANSFER_USED'],
    ]);
  }, 60_000);

  it('journals each request once answered, a refusal under its payment too, with no secret', async () => {
    const { database } = harness.platform.deps;
    const rows = await database('payment_requests').where({ reference: settled }).orderBy('id');
    expect(rows.map((row) => [row.action, row.owner_kind, row.outcome])).toEqual([
      ['area-b.create_payin', 'merchant', 'ok'],
      ['area-b.upstream_notification', 'upstream', 'ok'],
    ]);
    expect(rows[0]).toMatchObject({ owner_id: merchant.merchant_id, idempotency_key: expect.stringMatching(/^tl-key-/), client_address: expect.any(String) });
    expect(rows[0].duration_ms).toBeGreaterThanOrEqual(0);
    // A repeat of the create with the same Idempotency-Key answers the first payin, and is journaled under it too.
    const first = rows[0];
    const before = await database('payment_requests').where({ reference: settled }).count<{ count: string }[]>('* as count');
    const again = await post(harness.platform.facadeUrl, '/api/v1/payins', '{}', { 'X-API-Key': merchant.api_key, 'Idempotency-Key': first.idempotency_key });
    expect(again.status).toBe(422);
    const after = await database('payment_requests').where({ reference: settled }).count<{ count: string }[]>('* as count');
    // Refused before any reference was known: nothing to file it under.
    expect(after).toEqual(before);
  });
});
