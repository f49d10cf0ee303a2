/**
 * The payment search attributes: their keys and the start option (pure); their registration on a namespace that
 * lacks them and the worker's refusal to start without them (the run's Temporal dev server); and the payin, deposit
 * webhook-delivery and pre-transfer workflows (with mocked activities, test/workflows/bed.ts) carrying PaymentKind and
 * PaymentStatus through every state change, the merchant's order id and the partner's transaction id, findable by a
 * Web UI filter, with the timeline showing each change, and the static summary the Web UI lists.
 */
import { Connection } from '@temporalio/client';
import { ApplicationFailure, defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import { randomBytes } from 'node:crypto';
import { confirmWithPasswordUpdate, type DepositActivities, type DepositWorkflowInput } from '../../src/flows/deposit/contract';
import { notifyUpdate, type PayinActivities } from '../../src/flows/payin/contract';
import { confirmPreTransferUpdate, type PreTransferActivities } from '../../src/flows/pre-transfer/contract';
import type { PlatformDeps } from '../../src/platform-deps';
import {
  assertPaymentSearchAttributes,
  devServerSearchAttributeArgs,
  ensurePaymentSearchAttributes,
  PAYMENT_AMOUNT_UNITS,
  PAYMENT_CURRENCY,
  PAYMENT_KIND,
  PAYMENT_ORDER_ID,
  PAYMENT_OWNER_ID,
  PAYMENT_PARTNER_TRANSACTION_ID,
  PAYMENT_SEARCH_ATTRIBUTE_KEYS,
  PAYMENT_STATUS,
  paymentSearchAttributes,
  searchAttributeSpecs,
  SearchAttributesMissingError,
} from '../../src/temporal/search-attributes';
import { ensureNamespace } from '../../src/temporal/server';
import { workflowHistoryEntries } from '../../src/timeline/workflow-history';
import type { WebhookAttemptResult, WebhookDeliveryActivities } from '../../src/webhooks/contract';
import { startWorker } from '../../src/worker';
import { depositWorkflow } from '../../workflows/deposit';
import { payinWorkflow } from '../../workflows/payin';
import { preTransferWorkflow } from '../../workflows/pre-transfer';
import { webhookDeliveryWorkflow } from '../../workflows/webhook-delivery';
import { composeFile, COMPOSE_SECRETS } from '../support/deployment-files';
import { eventually, inMs, startWorkflowBed, type WorkflowBed } from '../workflows/bed';

const address = () => process.env.PAYMENTS_TEST_TEMPORAL_ADDRESS!;

describe('the payment search attribute keys and start option', () => {
  it('are what defineSearchAttributeKey defines, and the dev server flags register each', () => {
    expect([...PAYMENT_SEARCH_ATTRIBUTE_KEYS]).toEqual([
      defineSearchAttributeKey('PaymentOwnerId', SearchAttributeType.KEYWORD),
      defineSearchAttributeKey('PaymentKind', SearchAttributeType.KEYWORD),
      defineSearchAttributeKey('PaymentAmountUnits', SearchAttributeType.INT),
      defineSearchAttributeKey('PaymentCurrency', SearchAttributeType.KEYWORD),
      defineSearchAttributeKey('PaymentStatus', SearchAttributeType.KEYWORD),
      defineSearchAttributeKey('PaymentOrderId', SearchAttributeType.KEYWORD),
      defineSearchAttributeKey('PaymentPartnerTransactionId', SearchAttributeType.KEYWORD),
    ]);
    expect(devServerSearchAttributeArgs()).toEqual([
      '--search-attribute', 'PaymentOwnerId=Keyword',
      '--search-attribute', 'PaymentKind=Keyword',
      '--search-attribute', 'PaymentAmountUnits=Int',
      '--search-attribute', 'PaymentCurrency=Keyword',
      '--search-attribute', 'PaymentStatus=Keyword',
      '--search-attribute', 'PaymentOrderId=Keyword',
      '--search-attribute', 'PaymentPartnerTransactionId=Keyword',
    ]);
  });

  it('builds the typed start option: owner, kind, amount in minor units, currency, and the status when given', () => {
    expect(paymentSearchAttributes({ owner: { merchant_id: 'M100' }, kind: 'payin', amount_units: '12345678', currency: 'USDT' })).toEqual({
      typedSearchAttributes: [
        { key: PAYMENT_OWNER_ID, value: 'merchant:M100' },
        { key: PAYMENT_KIND, value: 'payin' },
        { key: PAYMENT_CURRENCY, value: 'USDT' },
        { key: PAYMENT_AMOUNT_UNITS, value: 12345678 },
      ],
      staticSummary: 'payin · 12.345678 USDT · merchant:M100',
      staticDetails: '**payin** of `merchant:M100`\n- amount: 12.345678 USDT (12345678 minor units)',
    });
    expect(paymentSearchAttributes({ owner: { partner_id: 'P7' }, kind: 'pre_transfer', amount_units: 500n, currency: 'CNY', status: 'pending' }).typedSearchAttributes).toEqual([
      { key: PAYMENT_OWNER_ID, value: 'partner:P7' },
      { key: PAYMENT_KIND, value: 'pre_transfer' },
      { key: PAYMENT_CURRENCY, value: 'CNY' },
      { key: PAYMENT_AMOUNT_UNITS, value: 500 },
      { key: PAYMENT_STATUS, value: 'pending' },
    ]);
  });

  it('carries the merchant’s order id, whole in the attribute and the details, cut short in the one-line summary', () => {
    const order = `ORD-${'x'.repeat(100)}`;
    const options = paymentSearchAttributes({ owner: { merchant_id: 'M1' }, kind: 'payin', amount_units: 1250n, currency: 'USD', order_id: order });
    expect(options.typedSearchAttributes).toContainEqual({ key: PAYMENT_ORDER_ID, value: order });
    expect(options.staticSummary).toBe(`payin · 12.50 USD · merchant:M1 · order ${order.slice(0, 63)}…`);
    expect(options.staticDetails).toContain(`- order id: \`${order}\``);
    // A webhook whose event has no amount: owner and kind only.
    expect(paymentSearchAttributes({ owner: { merchant_id: 'M1' }, kind: 'webhook' })).toEqual({
      typedSearchAttributes: [
        { key: PAYMENT_OWNER_ID, value: 'merchant:M1' },
        { key: PAYMENT_KIND, value: 'webhook' },
      ],
      staticSummary: 'webhook · merchant:M1',
      staticDetails: '**webhook** of `merchant:M1`',
    });
  });

  it('leaves out an amount a JSON number would round, and refuses one that is not minor units', () => {
    const exact = paymentSearchAttributes({ owner: { merchant_id: 'M1' }, kind: 'deposit', amount_units: String(Number.MAX_SAFE_INTEGER), currency: 'ETH' });
    expect(exact.typedSearchAttributes.find((pair) => pair.key === PAYMENT_AMOUNT_UNITS)?.value).toBe(Number.MAX_SAFE_INTEGER);
    const huge = paymentSearchAttributes({ owner: { merchant_id: 'M1' }, kind: 'deposit', amount_units: '9007199254740993', currency: 'ETH' });
    expect(huge.typedSearchAttributes.map((pair) => pair.key.name)).toEqual(['PaymentOwnerId', 'PaymentKind', 'PaymentCurrency']);
    for (const amount_units of ['12.5', '-1', '007', '', '1e6', ' 1']) {
      expect(() => paymentSearchAttributes({ owner: { merchant_id: 'M1' }, kind: 'payin', amount_units, currency: 'USDT' })).toThrow(TypeError);
    }
    expect(() => paymentSearchAttributes({ owner: { merchant_id: 'M1' }, kind: 'payin', amount_units: -5n, currency: 'USDT' })).toThrow(TypeError);
  });
});

describe('registration', () => {
  it('docker-compose registers every key with its type in its one-shot set-up, before the roles start', () => {
    const services = composeFile(COMPOSE_SECRETS).services;
    const script = services['temporal-namespace']!.command!.join('\n').replace(/\\\n\s*/g, ' ');
    const create = /temporal operator search-attribute create --namespace default \$\$tls (.*)/.exec(script);
    expect(create).not.toBeNull();
    const pairs = [...create![1]!.matchAll(/--name (\S+) --type (\S+)/g)].map((match) => `${match[1]}=${match[2]}`);
    expect(pairs).toEqual(searchAttributeSpecs());
    for (const role of ['payments-api', 'payments-worker']) {
      expect((services[role] as { depends_on?: Record<string, { condition: string }> }).depends_on?.['temporal-namespace']).toEqual({ condition: 'service_completed_successfully' });
    }
  });

  // A namespace of this file's own: the dev server registered the attributes on `default` only.
  const namespace = `timeline-bare-${randomBytes(4).toString('hex')}`;
  let connection: Connection;

  beforeAll(async () => {
    await ensureNamespace(address(), namespace, 1, () => undefined);
    connection = await Connection.connect({ address: address() });
  });
  afterAll(() => connection?.close());

  it('the run’s dev server has them on its namespace', async () => {
    await expect(assertPaymentSearchAttributes(connection, 'default')).resolves.toBeUndefined();
  });

  it('a worker refuses to start on a namespace without them, naming what to register', async () => {
    const deps = { temporal: { connection }, config: { TEMPORAL_NAMESPACE: namespace } } as unknown as PlatformDeps;
    const refused = startWorker(deps, { address: address() });
    await expect(refused).rejects.toBeInstanceOf(SearchAttributesMissingError);
    await expect(refused).rejects.toThrow(/PaymentOwnerId=Keyword.*PaymentAmountUnits=Int.*docs\/operations.md "Search attributes"/);
  });

  it('ensurePaymentSearchAttributes registers the missing ones once, and a second call changes nothing', async () => {
    const said: string[] = [];
    await ensurePaymentSearchAttributes(address(), namespace, (line) => said.push(line));
    expect(said).toEqual([`registered the search attributes PaymentOwnerId, PaymentKind, PaymentAmountUnits, PaymentCurrency, PaymentStatus, PaymentOrderId, PaymentPartnerTransactionId in the Temporal namespace ${namespace}`]);
    await expect(assertPaymentSearchAttributes(connection, namespace)).resolves.toBeUndefined();
    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    expect(Object.keys(listed.customAttributes ?? {})).toEqual(expect.arrayContaining(PAYMENT_SEARCH_ATTRIBUTE_KEYS.map((key) => key.name)));
    await ensurePaymentSearchAttributes(address(), namespace, (line) => said.push(line));
    expect(said).toHaveLength(1);
  });
});

type Activities = PayinActivities & DepositActivities & WebhookDeliveryActivities & PreTransferActivities;

describe('the workflows carry PaymentKind and PaymentStatus', () => {
  let bed: WorkflowBed<Activities>;
  const retry = { initial_seconds: 0.05, max_interval_seconds: 0.05, window_seconds: 0.2 };

  beforeAll(async () => {
    bed = await startWorkflowBed<Activities>({
      settlePayin: async ({ invoice_reference, trx_ref }) => ({ webhook_id: `${invoice_reference}:paid:${trx_ref}` }),
      expirePayin: async ({ invoice_reference }) => ({ webhook_id: `${invoice_reference}:expired` }),
      closePayin: async ({ invoice_reference }) => ({ webhook_id: `${invoice_reference}:closed` }),
      startWebhookDeliveries: async () => undefined,
      startRefunds: async () => undefined,
      verifyDepositPassword: async ({ sealed_password }) => ({ valid: sealed_password === 'sealed-right' }),
      authorizeDepositCard: async () => ({ approved: true, authorization_id: 'AUTH-1' }),
      settleDepositCard: async () => undefined,
      completeDeposit: async () => ({ state: 'completed' }),
      closeDeposit: async () => undefined,
      attemptWebhookDelivery: async (): Promise<WebhookAttemptResult> => ({ delivered: true, attempt: 1 }),
      markWebhookFailed: async () => undefined,
      pendingPredecessor: async () => ({ webhook_id: null }),
      postPreTransfer: async ({ fund_transfer_id }) => ({ fund_transfer_id }),
      voidPreTransfer: async () => undefined,
    });
  });
  afterAll(() => bed?.stop());

  /** The run's current PaymentKind and PaymentStatus (describe reads the mutable state, not visibility). */
  async function statusOf(workflowId: string) {
    const { typedSearchAttributes } = await bed.client.workflow.getHandle(workflowId).describe();
    return { kind: typedSearchAttributes.get(PAYMENT_KIND), status: typedSearchAttributes.get(PAYMENT_STATUS) };
  }
  /** The PaymentStatus values the run's history upserted, in order (from the timeline's workflow source). */
  async function upserts(workflowId: string): Promise<unknown[]> {
    const answer = await workflowHistoryEntries(bed.client, workflowId, { deadlineSeconds: 10 });
    if (answer.state !== 'ok') throw new Error(answer.reason);
    return answer.entries.filter((entry) => entry.kind === 'search_attributes.upserted').map((entry) => (entry.details.search_attributes as Record<string, unknown>).PaymentStatus);
  }
  /** The workflow ids a Web UI filter (a visibility query) finds, once visibility caught up. */
  async function found(query: string, workflowId: string): Promise<boolean> {
    return eventually(async () => {
      const listed = await bed.client.workflowService.listWorkflowExecutions({ namespace: bed.client.options.namespace, query: `${query} AND WorkflowId = "${workflowId}"` });
      return (listed.executions ?? []).length === 1;
    });
  }

  it('a payin: waiting, then success, one upsert each; a Web UI filter finds it by kind and status', async () => {
    const { workflowId } = bed.workflow('PAYIN');
    const handle = await bed.client.workflow.start(payinWorkflow, { taskQueue: bed.taskQueue, workflowId, args: [{ invoice_reference: workflowId, ttl_seconds: 3600, expires_at: inMs(3_600_000) }] });
    await eventually(async () => (await statusOf(workflowId)).status === 'waiting');
    expect(await statusOf(workflowId)).toEqual({ kind: 'payin', status: 'waiting' });
    await handle.executeUpdate(notifyUpdate, { args: [{ status: 'success', amount_units: '3000000', trx_ref: 'TRX-1' }] });
    await handle.result();
    expect(await statusOf(workflowId)).toEqual({ kind: 'payin', status: 'success' });
    expect(await upserts(workflowId)).toEqual(['waiting', 'success']);
    expect(await found('PaymentKind = "payin" AND PaymentStatus = "success"', workflowId)).toBe(true);
  });

  it('a payin that expires: waiting, then expired', async () => {
    const { workflowId } = bed.workflow('PAYIN');
    const handle = await bed.client.workflow.start(payinWorkflow, { taskQueue: bed.taskQueue, workflowId, args: [{ invoice_reference: workflowId, ttl_seconds: 3600, expires_at: inMs(300) }] });
    expect(await handle.result()).toMatchObject({ outcome: 'expired' });
    expect(await upserts(workflowId)).toEqual(['waiting', 'expired']);
  });

  it('a payin started with the start option: owner, amount, currency and order id searchable, its summary listed, no upsert of what it already says', async () => {
    const { workflowId } = bed.workflow('PAYIN');
    const merchant = `M${randomBytes(4).toString('hex').toUpperCase()}`;
    const order = `order-${randomBytes(4).toString('hex')}`;
    const { typedSearchAttributes, staticSummary, staticDetails } = paymentSearchAttributes({
      owner: { merchant_id: merchant },
      kind: 'payin',
      amount_units: '3000000',
      currency: 'USDT',
      status: 'waiting',
      order_id: order,
    });
    const handle = await bed.client.workflow.start(payinWorkflow, {
      taskQueue: bed.taskQueue,
      workflowId,
      args: [{ invoice_reference: workflowId, ttl_seconds: 3600, expires_at: inMs(3_600_000) }],
      typedSearchAttributes: typedSearchAttributes as SearchAttributePair[],
      staticSummary,
      staticDetails,
    });
    await handle.executeUpdate(notifyUpdate, { args: [{ status: 'success', amount_units: '3000000', trx_ref: 'TRX-1' }] });
    await handle.result();
    expect(await upserts(workflowId)).toEqual(['success']);
    const { typedSearchAttributes: carried } = await handle.describe();
    expect(carried.get(PAYMENT_OWNER_ID)).toBe(`merchant:${merchant}`);
    expect(carried.get(PAYMENT_AMOUNT_UNITS)).toBe(3000000);
    expect(carried.get(PAYMENT_CURRENCY)).toBe('USDT');
    expect(carried.get(PAYMENT_ORDER_ID)).toBe(order);
    expect(await found(`PaymentOwnerId = "merchant:${merchant}" AND PaymentAmountUnits >= 3000000 AND PaymentStatus = "success"`, workflowId)).toBe(true);
    expect(await found(`PaymentOrderId = "${order}"`, workflowId)).toBe(true);
    // The Web UI's list and the run's page read the static summary and details from the run's description.
    const description = await handle.describe();
    expect(await description.staticSummary()).toBe(`payin · 3.000000 USDT · merchant:${merchant} · order ${order}`);
    expect(await description.staticDetails()).toContain(`- order id: \`${order}\``);
    // The timeline writes the amount as a decimal string of minor units.
    const answer = await workflowHistoryEntries(bed.client, workflowId, { deadlineSeconds: 10 });
    if (answer.state !== 'ok') throw new Error(answer.reason);
    expect(answer.entries[0]!.details.search_attributes).toMatchObject({ PaymentOwnerId: `merchant:${merchant}`, PaymentAmountUnits: '3000000', PaymentCurrency: 'USDT' });
  });

  it('a deposit: pending, then its end state (completed; expired)', async () => {
    const input = (reference: string, expires_at: string): DepositWorkflowInput =>
      ({ reference, confirmation: 'password', ttl_seconds: 3600, expires_at, max_password_attempts: 3 }) as DepositWorkflowInput;
    const { workflowId } = bed.workflow('DEP');
    const handle = await bed.client.workflow.start(depositWorkflow, { taskQueue: bed.taskQueue, workflowId, args: [input(workflowId, inMs(3_600_000))] });
    await eventually(async () => (await statusOf(workflowId)).status === 'pending');
    // A wrong password changes no state: no upsert.
    expect(await handle.executeUpdate(confirmWithPasswordUpdate, { args: [{ confirmation_id: 'dcf_1', sealed_password: 'sealed-wrong' }] })).toMatchObject({ outcome: 'wrong_password' });
    expect(await handle.executeUpdate(confirmWithPasswordUpdate, { args: [{ confirmation_id: 'dcf_2', sealed_password: 'sealed-right' }] })).toMatchObject({ outcome: 'completed' });
    await handle.result();
    expect(await statusOf(workflowId)).toEqual({ kind: 'deposit', status: 'completed' });
    expect(await upserts(workflowId)).toEqual(['pending', 'completed']);

    const expiring = bed.workflow('DEP');
    const expired = await bed.client.workflow.start(depositWorkflow, { taskQueue: bed.taskQueue, workflowId: expiring.workflowId, args: [input(expiring.workflowId, inMs(300))] });
    expect(await expired.result()).toEqual({ state: 'expired' });
    expect(await upserts(expiring.workflowId)).toEqual(['pending', 'expired']);
  });

  it('a webhook delivery: one upsert, with its end (delivered or failed)', async () => {
    const delivered = bed.workflow('WH');
    await bed.client.workflow.execute(webhookDeliveryWorkflow, { taskQueue: bed.taskQueue, workflowId: delivered.workflowId, args: [{ webhook_id: delivered.workflowId, retry }] });
    expect(await statusOf(delivered.workflowId)).toEqual({ kind: 'webhook', status: 'delivered' });
    expect(await upserts(delivered.workflowId)).toEqual(['delivered']);

    const failing = bed.workflow('WH', { attemptWebhookDelivery: async () => ({ delivered: false, attempt: 1 }) });
    expect(await bed.client.workflow.execute(webhookDeliveryWorkflow, { taskQueue: bed.taskQueue, workflowId: failing.workflowId, args: [{ webhook_id: failing.workflowId, retry }] })).toMatchObject({ delivered: false });
    expect(await upserts(failing.workflowId)).toEqual(['failed']);
    expect(await found('PaymentKind = "webhook" AND PaymentStatus = "failed"', failing.workflowId)).toBe(true);
  });

  it('a pre-transfer: the partner’s transaction id searchable once its confirm posted it, not before', async () => {
    const { workflowId } = bed.workflow('PT');
    const partnerTransaction = `PTX${randomBytes(4).toString('hex')}`;
    const handle = await bed.client.workflow.start(preTransferWorkflow, { taskQueue: bed.taskQueue, workflowId, args: [{ pre_transfer_id: workflowId, ttl_seconds: 3600 }] });
    expect((await handle.describe()).typedSearchAttributes.get(PAYMENT_PARTNER_TRANSACTION_ID)).toBeUndefined();
    await handle.executeUpdate(confirmPreTransferUpdate, { args: [{ partner_transaction_id: partnerTransaction }] });
    expect(await handle.result()).toEqual({ state: 'confirmed' });
    expect((await handle.describe()).typedSearchAttributes.get(PAYMENT_PARTNER_TRANSACTION_ID)).toBe(partnerTransaction);
    expect(await found(`PaymentPartnerTransactionId = "${partnerTransaction}"`, workflowId)).toBe(true);
  });

  it('a pre-transfer whose post is refused carries no partner transaction id', async () => {
    const { workflowId } = bed.workflow('PT', {
      postPreTransfer: async () => {
        throw ApplicationFailure.nonRetryable('partner_transaction_id used by PT0', 'DUPLICATE_PARTNER_TRANSACTION_ID');
      },
    });
    const handle = await bed.client.workflow.start(preTransferWorkflow, { taskQueue: bed.taskQueue, workflowId, args: [{ pre_transfer_id: workflowId, ttl_seconds: 3600 }] });
    await expect(handle.executeUpdate(confirmPreTransferUpdate, { args: [{ partner_transaction_id: 'USED1' }] })).rejects.toThrow();
    expect((await handle.describe()).typedSearchAttributes.get(PAYMENT_PARTNER_TRANSACTION_ID)).toBeUndefined();
    await handle.terminate('test done');
  });

  it('a refused settlement changes no status', async () => {
    const { workflowId } = bed.workflow('PAYIN', {
      settlePayin: async ({ invoice_reference, trx_ref }) => {
        if (trx_ref === 'FORGED') throw ApplicationFailure.nonRetryable('no applied notification', 'SETTLEMENT_NOT_AUTHORIZED');
        return { webhook_id: `${invoice_reference}:paid:${trx_ref}` };
      },
    });
    const handle = await bed.client.workflow.start(payinWorkflow, { taskQueue: bed.taskQueue, workflowId, args: [{ invoice_reference: workflowId, ttl_seconds: 3600, expires_at: inMs(3_600_000) }] });
    expect(await handle.executeUpdate(notifyUpdate, { args: [{ status: 'success', amount_units: '900000000', trx_ref: 'FORGED' }] })).toMatchObject({ refused: 'SETTLEMENT_NOT_AUTHORIZED' });
    expect(await statusOf(workflowId)).toEqual({ kind: 'payin', status: 'waiting' });
    expect(await upserts(workflowId)).toEqual(['waiting']);
  });
});
