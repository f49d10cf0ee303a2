/**
 * PayinWorkflow with mocked activities on a real Temporal dev server (test/workflows/bed.ts): waiting → success,
 * close or expired; the `notify` Update (with its validator), the `settled` and `closed` signals and their with-Start
 * forms; refusals, retries, messages that race the expiry timer, several messages in one activation, and messages
 * after the run completed. Durations come from the workflow input.
 */
import { ApplicationFailure, defaultPayloadConverter } from '@temporalio/common';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { closedSignal, notifyUpdate, settledSignal, type PayinActivities, type PayinNotificationInput, type PayinWorkflowInput } from '../../src/flows/payin/contract';
import { payinWorkflow } from '../../workflows/payin';
import { deferred, eventually, failureOf, inMs, names, startWorkflowBed, type ActivityCall, type WorkflowBed } from './bed';

const HOUR_MS = 3_600_000;

/** The mocks' webhook ids: one per event, as the real activities derive them from the payin and the payment. */
const paid = (invoice_reference: string, trx_ref: string) => `${invoice_reference}:paid:${trx_ref}`;
const expired = (invoice_reference: string) => `${invoice_reference}:expired`;
const closed = (invoice_reference: string) => `${invoice_reference}:closed`;

const success = (trx_ref: string, amount_units = '3000000'): PayinNotificationInput => ({ status: 'success', amount_units, trx_ref });
const close = (trx_ref: string): PayinNotificationInput => ({ status: 'close', trx_ref });

describe('PayinWorkflow', () => {
  let bed: WorkflowBed<PayinActivities>;

  beforeAll(async () => {
    bed = await startWorkflowBed<PayinActivities>({
      settlePayin: async ({ invoice_reference, trx_ref }) => ({ webhook_id: paid(invoice_reference, trx_ref) }),
      expirePayin: async ({ invoice_reference }) => ({ webhook_id: expired(invoice_reference) }),
      closePayin: async ({ invoice_reference }) => ({ webhook_id: closed(invoice_reference) }),
      startWebhookDeliveries: async () => undefined,
      startRefunds: async () => undefined,
    });
  });
  afterAll(() => bed.stop());

  function payin(answers: Partial<PayinActivities> = {}, input: Partial<PayinWorkflowInput> = {}, taskQueue = bed.taskQueue) {
    const { workflowId, calls } = bed.workflow('PAYIN', answers);
    const options = { taskQueue, workflowId, args: [{ invoice_reference: workflowId, ttl_seconds: 3600, expires_at: inMs(HOUR_MS), ...input }] as [PayinWorkflowInput] };
    return { invoice_reference: workflowId, calls, options };
  }
  async function start(answers: Partial<PayinActivities> = {}, input: Partial<PayinWorkflowInput> = {}) {
    const created = payin(answers, input);
    return { ...created, handle: await bed.client.workflow.start(payinWorkflow, created.options) };
  }
  const deliveries = (calls: ActivityCall[]) => calls.filter((call) => call.name === 'startWebhookDeliveries').map((call) => call.input);

  describe('expiry', () => {
    it('expires at expires_at when no message arrives, and hands the expiry webhook over', async () => {
      const { invoice_reference, handle, calls } = await start({}, { expires_at: inMs(300) });
      expect(await handle.result()).toEqual({ outcome: 'expired', webhook_ids: [expired(invoice_reference)] });
      expect(calls.map(({ name, input }) => [name, input])).toEqual([
        ['expirePayin', { invoice_reference }],
        ['startWebhookDeliveries', { webhook_ids: [expired(invoice_reference)] }],
      ]);
    });

    it('expires after ttl_seconds when its input has no expires_at', async () => {
      const { invoice_reference, handle } = await start({}, { expires_at: undefined, ttl_seconds: 0.3 });
      expect(await handle.result()).toEqual({ outcome: 'expired', webhook_ids: [expired(invoice_reference)] });
    });
  });

  describe('outcome-policy refunds', () => {
    it('starts the refunds a settlement recorded after its webhook was handed over, each once', async () => {
      const gate = deferred();
      const { invoice_reference, handle, calls } = await start({
        // A repeat of the payment answers the same refund again (the activity's idempotent answer): started once.
        settlePayin: async ({ invoice_reference: reference, trx_ref }) => {
          await gate.promise;
          return { webhook_id: paid(reference, trx_ref), refund_references: ['RFD-TRX-1'] };
        },
      });
      await handle.signal(settledSignal, { amount_units: '3000000', trx_ref: 'TRX-1' });
      await handle.signal(settledSignal, { amount_units: '3000000', trx_ref: 'TRX-1' });
      gate.resolve();
      expect(await handle.result()).toEqual({ outcome: 'success', webhook_ids: [paid(invoice_reference, 'TRX-1')] });
      // Handed over once: the run recorded one startRefunds. A local activity runs at least once (a workflow task
      // that did not complete runs it again with the same input; the real one starts each RefundWorkflow by its id),
      // so the calls may repeat, but never with another reference.
      const events = (await handle.fetchHistory()).events ?? [];
      const recorded = events
        .map((event) => event.markerRecordedEventAttributes)
        .filter((marker) => marker?.markerName === 'core_local_activity')
        .map((marker) => defaultPayloadConverter.fromPayload<{ activity_type?: string }>(marker!.details!.data!.payloads![0]!).activity_type);
      expect(recorded.filter((type) => type === 'startRefunds')).toHaveLength(1);
      const started = calls.filter((call) => call.name === 'startRefunds').map((call) => call.input);
      expect(new Set(started.map((input) => JSON.stringify(input)))).toEqual(new Set([JSON.stringify({ refund_references: ['RFD-TRX-1'] })]));
      expect(names(calls).indexOf('startRefunds')).toBeGreaterThan(names(calls).indexOf('startWebhookDeliveries'));
    });

    it('retries startRefunds until it succeeds (the refunds stay held meanwhile)', async () => {
      let failures = 1;
      const { handle, calls } = await start({
        settlePayin: async ({ invoice_reference: reference, trx_ref }) => ({ webhook_id: paid(reference, trx_ref), refund_references: ['RFD-A', 'RFD-B'] }),
        startRefunds: async () => {
          if (failures-- > 0) throw new Error('temporal unreachable');
        },
      });
      await handle.executeUpdate(notifyUpdate, { args: [success('TRX-1')] });
      expect((await handle.result()).outcome).toBe('success');
      expect(calls.filter((call) => call.name === 'startRefunds').map((call) => call.input)).toEqual([
        { refund_references: ['RFD-A', 'RFD-B'] },
        { refund_references: ['RFD-A', 'RFD-B'] },
      ]);
    });
  });

  describe('notify Update', () => {
    it('settles a success and answers once its webhook was handed over; the message wins against the timer', async () => {
      const { invoice_reference, handle, calls } = await start();
      const answer = await handle.executeUpdate(notifyUpdate, { args: [success('TRX-1')] });
      expect(answer).toEqual({ webhook_id: paid(invoice_reference, 'TRX-1') });
      expect(calls.map(({ name, input }) => [name, input])).toEqual([
        ['settlePayin', { invoice_reference, amount_units: '3000000', trx_ref: 'TRX-1' }],
        ['startWebhookDeliveries', { webhook_ids: [paid(invoice_reference, 'TRX-1')] }],
      ]);
      expect(await handle.result()).toEqual({ outcome: 'success', webhook_ids: [paid(invoice_reference, 'TRX-1')] });
    });

    it('closes a waiting payin on a close notification, naming its trx_ref', async () => {
      const { invoice_reference, handle, calls } = await start();
      expect(await handle.executeUpdate(notifyUpdate, { args: [close('TRX-C')] })).toEqual({ webhook_id: closed(invoice_reference) });
      expect(calls[0]).toMatchObject({ name: 'closePayin', input: { invoice_reference, trx_ref: 'TRX-C' } });
      expect(await handle.result()).toEqual({ outcome: 'close', webhook_ids: [closed(invoice_reference)] });
    });

    it('answers a settlement the activity refuses for good with its reason; nothing moved, the payin keeps waiting', async () => {
      const { invoice_reference, handle, calls } = await start({
        settlePayin: async ({ invoice_reference: reference, trx_ref }) => {
          if (trx_ref === 'FORGED') throw ApplicationFailure.nonRetryable('no applied notification', 'SETTLEMENT_NOT_AUTHORIZED');
          return { webhook_id: paid(reference, trx_ref) };
        },
      });
      expect(await handle.executeUpdate(notifyUpdate, { args: [success('FORGED', '900000000')] })).toEqual({ webhook_id: null, refused: 'SETTLEMENT_NOT_AUTHORIZED' });
      expect((await handle.describe()).status.name).toBe('RUNNING');
      expect(await handle.executeUpdate(notifyUpdate, { args: [success('TRX-1')] })).toEqual({ webhook_id: paid(invoice_reference, 'TRX-1') });
      expect(await handle.result()).toEqual({ outcome: 'success', webhook_ids: [paid(invoice_reference, 'TRX-1')] });
      expect(names(calls)).toEqual(['settlePayin', 'settlePayin', 'startWebhookDeliveries']);
    });

    it('still handles a close after a refused one', async () => {
      const { invoice_reference, handle, calls } = await start({
        closePayin: async ({ invoice_reference: reference, trx_ref }) => {
          if (trx_ref === 'FORGED') throw ApplicationFailure.nonRetryable('no applied close', 'CLOSE_NOT_AUTHORIZED');
          return { webhook_id: closed(reference) };
        },
      });
      expect(await handle.executeUpdate(notifyUpdate, { args: [close('FORGED')] })).toEqual({ webhook_id: null, refused: 'CLOSE_NOT_AUTHORIZED' });
      expect(await handle.executeUpdate(notifyUpdate, { args: [close('TRX-C')] })).toEqual({ webhook_id: closed(invoice_reference) });
      expect(await handle.result()).toEqual({ outcome: 'close', webhook_ids: [closed(invoice_reference)] });
      expect(names(calls)).toEqual(['closePayin', 'closePayin', 'startWebhookDeliveries']);
    });

    it('retries a settlement that failed on an infrastructure fault until it succeeds', async () => {
      const { invoice_reference, handle, calls } = await start({
        settlePayin: async ({ invoice_reference: reference, trx_ref }) => {
          if (calls.length === 1) throw new Error('connection terminated');
          return { webhook_id: paid(reference, trx_ref) };
        },
      });
      expect(await handle.executeUpdate(notifyUpdate, { args: [success('TRX-1')] })).toEqual({ webhook_id: paid(invoice_reference, 'TRX-1') });
      expect(calls.map(({ name, attempt }) => [name, attempt])).toEqual([
        ['settlePayin', 1],
        ['settlePayin', 2],
        ['startWebhookDeliveries', 1],
      ]);
    });

    it('refuses a malformed notification sent straight to Temporal before any activity runs', async () => {
      const { invoice_reference, handle, calls } = await start();
      // Another spelling of a recorded amount would name another ledger key; a non-decimal one would fail forever.
      const malformed: unknown[][] = [
        [],
        [{ status: 'success', amount_units: '03000000', trx_ref: 'TRX-1' }],
        [{ status: 'success', amount_units: ' 3000000', trx_ref: 'TRX-1' }],
        [{ status: 'success', amount_units: '0x2DC6C0', trx_ref: 'TRX-1' }],
        [{ status: 'success', amount_units: '-3000000', trx_ref: 'TRX-1' }],
        [{ status: 'success', amount_units: '99999999999999999999', trx_ref: 'TRX-1' }],
        [{ status: 'success', amount_units: 3000000, trx_ref: 'TRX-1' }],
        [{ status: 'success', trx_ref: 'TRX-1' }],
        [{ status: 'success', amount_units: '3000000', trx_ref: 'T'.repeat(256) }],
        [{ status: 'close', trx_ref: { $ne: null } }],
        [{ status: 'refund', trx_ref: 'TRX-1' }],
      ];
      for (const args of malformed) {
        expect(await failureOf(handle.executeUpdate('notify', { args: args as [unknown] }))).toMatch(/^(SETTLEMENT|CLOSE)_NOT_AUTHORIZED$/);
      }
      expect(calls).toEqual([]);
      // A trx_ref of 255 characters is within the limit, however many UTF-16 units they take.
      expect(await handle.executeUpdate(notifyUpdate, { args: [success('😀'.repeat(255))] })).toEqual({ webhook_id: paid(invoice_reference, '😀'.repeat(255)) });
      expect(names(calls)).toEqual(['settlePayin', 'startWebhookDeliveries']);
    }, 30_000);
  });

  describe('signals', () => {
    it('settles on a settled signal (signal-with-start), like the Update', async () => {
      const { invoice_reference, calls, options } = payin();
      const handle = await bed.client.workflow.signalWithStart(payinWorkflow, { ...options, signal: settledSignal, signalArgs: [{ amount_units: '3000000', trx_ref: 'TRX-1' }] });
      expect(await handle.result()).toEqual({ outcome: 'success', webhook_ids: [paid(invoice_reference, 'TRX-1')] });
      expect(calls[0]).toMatchObject({ name: 'settlePayin', input: { invoice_reference, amount_units: '3000000', trx_ref: 'TRX-1' } });
    });

    it('closes on a closed signal', async () => {
      const { invoice_reference, handle, calls } = await start();
      await handle.signal(closedSignal, { trx_ref: 'TRX-C' });
      expect(await handle.result()).toEqual({ outcome: 'close', webhook_ids: [closed(invoice_reference)] });
      expect(calls[0]).toMatchObject({ name: 'closePayin', input: { invoice_reference, trx_ref: 'TRX-C' } });
    });

    it('ignores malformed signals sent straight to Temporal: they reach no activity and hold up no later message', async () => {
      const { invoice_reference, handle, calls } = await start();
      await handle.signal('settled');
      await handle.signal('settled', { amount_units: '03000000', trx_ref: 'TRX-1' });
      await handle.signal('settled', { amount_units: 'a lot', trx_ref: 'TRX-1' });
      await handle.signal('closed', { trx_ref: 42 });
      await handle.signal('closed');
      expect(await handle.executeUpdate(notifyUpdate, { args: [success('TRX-1')] })).toEqual({ webhook_id: paid(invoice_reference, 'TRX-1') });
      expect(await handle.result()).toEqual({ outcome: 'success', webhook_ids: [paid(invoice_reference, 'TRX-1')] });
      expect(names(calls)).toEqual(['settlePayin', 'startWebhookDeliveries']);
    });
  });

  describe('several messages and the timer', () => {
    /** A payin whose run has not taken its first task yet: the signals sent now all reach its first activation. */
    async function heldPayin() {
      const held = bed.heldQueue();
      const created = payin({}, {}, held.taskQueue);
      return { ...created, handle: await bed.client.workflow.start(payinWorkflow, created.options), release: held.release };
    }

    it('applies exactly one of two closes that arrive together', async () => {
      const { invoice_reference, handle, calls, release } = await heldPayin();
      await handle.signal(closedSignal, { trx_ref: 'TRX-C1' });
      await handle.signal(closedSignal, { trx_ref: 'TRX-C2' });
      await release();
      expect(await handle.result()).toEqual({ outcome: 'close', webhook_ids: [closed(invoice_reference)] });
      expect(calls.map(({ name, input }) => [name, input])).toEqual([
        ['closePayin', { invoice_reference, trx_ref: 'TRX-C1' }],
        ['startWebhookDeliveries', { webhook_ids: [closed(invoice_reference)] }],
      ]);
    });

    it('credits every payment of one activation, in arrival order, before a close that arrived among them', async () => {
      const { invoice_reference, handle, calls, release } = await heldPayin();
      await handle.signal(settledSignal, { amount_units: '3000000', trx_ref: 'TRX-1' });
      await handle.signal(closedSignal, { trx_ref: 'TRX-C' });
      await handle.signal(settledSignal, { amount_units: '1000000', trx_ref: 'TRX-2' });
      await release();
      const webhook_ids = [paid(invoice_reference, 'TRX-1'), paid(invoice_reference, 'TRX-2')];
      expect(await handle.result()).toEqual({ outcome: 'success', webhook_ids });
      // The payin is no longer waiting once paid: the close has nothing to do, and no money is dropped for it.
      expect(calls.map(({ name, input }) => [name, input])).toEqual([
        ['settlePayin', { invoice_reference, amount_units: '3000000', trx_ref: 'TRX-1' }],
        ['settlePayin', { invoice_reference, amount_units: '1000000', trx_ref: 'TRX-2' }],
        ['startWebhookDeliveries', { webhook_ids }],
      ]);
    });

    it('takes the messages of its first task before expiring when started after its deadline (late success with-Start)', async () => {
      const { invoice_reference, calls, options } = payin({}, { expires_at: inMs(-HOUR_MS) });
      const startWorkflowOperation = new WithStartWorkflowOperation(payinWorkflow, { ...options, workflowIdConflictPolicy: 'USE_EXISTING' });
      const answer = await bed.client.workflow.executeUpdateWithStart(notifyUpdate, { args: [success('TRX-1')], startWorkflowOperation });
      expect(answer).toEqual({ webhook_id: paid(invoice_reference, 'TRX-1') });
      const handle = await startWorkflowOperation.workflowHandle();
      expect(await handle.result()).toEqual({ outcome: 'success', webhook_ids: [paid(invoice_reference, 'TRX-1')] });
      expect(names(calls)).toEqual(['settlePayin', 'startWebhookDeliveries']);
    });

    it('handles a message that arrives while the expiry is being applied: the timer won, the payment is still credited', async () => {
      const releaseExpiry = deferred();
      const { invoice_reference, handle, calls } = await start(
        {
          expirePayin: async ({ invoice_reference: reference }) => {
            if (calls.length === 1) await releaseExpiry.promise;
            return { webhook_id: expired(reference) };
          },
        },
        { expires_at: inMs(300) },
      );
      await eventually(() => calls.length === 1);
      // The signal is recorded while the expiry's workflow task runs: the run cannot complete without handling it.
      await handle.signal(settledSignal, { amount_units: '3000000', trx_ref: 'TRX-LATE' });
      releaseExpiry.resolve();
      // Credited in this run. The workflow task that applied the expiry could not complete the run past the signal;
      // its next task takes both again (the activities are idempotent), in whichever order the SDK delivers them.
      const result = await handle.result();
      expect(result.outcome).toBe('success');
      expect(result.webhook_ids).toContain(paid(invoice_reference, 'TRX-LATE'));
      expect(calls.filter((call) => call.name === 'settlePayin')).toHaveLength(1);
      const handedOver = new Set(deliveries(calls).flatMap((input) => (input as { webhook_ids: string[] }).webhook_ids));
      for (const webhook_id of result.webhook_ids) expect(handedOver).toContain(webhook_id);
    }, 30_000);

    it('refuses a message to a run that completed; Update-with-Start credits it late in a new run', async () => {
      const { invoice_reference, handle, calls, options } = await start({}, { expires_at: inMs(300) });
      expect(await handle.result()).toEqual({ outcome: 'expired', webhook_ids: [expired(invoice_reference)] });
      const firstRun = (await handle.describe()).runId;
      await expect(handle.executeUpdate(notifyUpdate, { args: [success('TRX-LATE')] })).rejects.toThrow();
      await expect(handle.signal(settledSignal, { amount_units: '3000000', trx_ref: 'TRX-LATE' })).rejects.toThrow();
      expect(names(calls)).toEqual(['expirePayin', 'startWebhookDeliveries']);

      const startWorkflowOperation = new WithStartWorkflowOperation(payinWorkflow, { ...options, workflowIdConflictPolicy: 'USE_EXISTING' });
      const answer = await bed.client.workflow.executeUpdateWithStart(notifyUpdate, { args: [success('TRX-LATE')], startWorkflowOperation });
      expect(answer).toEqual({ webhook_id: paid(invoice_reference, 'TRX-LATE') });
      const second = await startWorkflowOperation.workflowHandle();
      expect(await second.result()).toEqual({ outcome: 'success', webhook_ids: [paid(invoice_reference, 'TRX-LATE')] });
      expect((await second.describe()).runId).not.toBe(firstRun);
      expect(names(calls)).toEqual(['expirePayin', 'startWebhookDeliveries', 'settlePayin', 'startWebhookDeliveries']);
    });
  });
});
