/**
 * DepositWorkflow with mocked activities on a real Temporal dev server (test/workflows/bed.ts): its states, the
 * `state` query, both confirmation Updates with their validators, and its failure paths. Durations come from the
 * workflow input (`expires_at` a fraction of a second away, or an hour when the test is not about expiry).
 */
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowUpdateStage } from '@temporalio/client';
import {
  confirmWithPasswordUpdate,
  depositStateQuery,
  submitCardConfirmationUpdate,
  type DepositActivities,
  type DepositWorkflowInput,
} from '../../src/flows/deposit/contract';
import { depositWorkflow } from '../../workflows/deposit';
import { deferred, eventually, failureOf, historyHas, inMs, names, startWorkflowBed, type WorkflowBed } from './bed';

const HOUR_MS = 3_600_000;

describe('DepositWorkflow', () => {
  let bed: WorkflowBed<DepositActivities>;

  beforeAll(async () => {
    bed = await startWorkflowBed<DepositActivities>({
      verifyDepositPassword: async ({ sealed_password }) => ({ valid: sealed_password === 'sealed-right' }),
      authorizeDepositCard: async () => ({ approved: true, authorization_id: 'AUTH-1' }),
      settleDepositCard: async () => undefined,
      completeDeposit: async () => ({ state: 'completed' }),
      closeDeposit: async () => undefined,
    });
  });
  afterAll(() => bed.stop());

  /** Starts a deposit workflow whose activities answer `answers` (else the defaults above). */
  async function start(confirmation: DepositWorkflowInput['confirmation'], answers: Partial<DepositActivities> = {}, input: Partial<DepositWorkflowInput> = {}) {
    const { workflowId, calls } = bed.workflow('DEP', answers);
    const handle = await bed.client.workflow.start(depositWorkflow, {
      taskQueue: bed.taskQueue,
      workflowId,
      args: [{ reference: workflowId, confirmation, ttl_seconds: 3600, expires_at: inMs(HOUR_MS), max_password_attempts: 3, ...input }],
    });
    return { reference: workflowId, handle, calls };
  }
  const password = (confirmation_id: string, sealed_password = 'sealed-right') => ({ args: [{ confirmation_id, sealed_password }] as [{ confirmation_id: string; sealed_password: string }] });
  const card = (confirmation_id: string) => ({ args: [{ confirmation_id }] as [{ confirmation_id: string }] });

  describe('password (OTP)', () => {
    it('completes on the right password, naming the recorded confirmation to each step', async () => {
      const { reference, handle, calls } = await start('password');
      expect(await handle.query(depositStateQuery)).toEqual({ state: 'pending', wrong_passwords: 0 });
      expect(await handle.executeUpdate(confirmWithPasswordUpdate, password('dcf_1'))).toEqual({ outcome: 'completed', attempts_left: 3 });
      expect(await handle.result()).toEqual({ state: 'completed' });
      expect(calls.map(({ name, input }) => [name, input])).toEqual([
        ['verifyDepositPassword', { reference, sealed_password: 'sealed-right', confirmation_id: 'dcf_1' }],
        ['completeDeposit', { reference, confirmation_id: 'dcf_1' }],
      ]);
      expect(await handle.query(depositStateQuery)).toEqual({ state: 'completed', wrong_passwords: 0 });
    });

    it('counts wrong passwords and cancels the deposit at max_password_attempts', async () => {
      const { reference, handle, calls } = await start('password', {}, { max_password_attempts: 2 });
      expect(await handle.executeUpdate(confirmWithPasswordUpdate, password('dcf_1', 'sealed-wrong'))).toEqual({ outcome: 'wrong_password', attempts_left: 1 });
      expect(await handle.query(depositStateQuery)).toEqual({ state: 'pending', wrong_passwords: 1 });
      expect(await handle.executeUpdate(confirmWithPasswordUpdate, password('dcf_2', 'sealed-wrong'))).toEqual({ outcome: 'cancelled', attempts_left: 0 });
      expect(await handle.result()).toEqual({ state: 'cancelled' });
      expect(names(calls)).toEqual(['verifyDepositPassword', 'verifyDepositPassword', 'closeDeposit']);
      expect(calls[2]!.input).toEqual({ reference, state: 'cancelled', confirmation_id: 'dcf_2' });
    });

    it('lets a password retried after an infrastructure fault complete (the activity fails, then succeeds)', async () => {
      const { handle, calls } = await start('password', {
        verifyDepositPassword: async () => {
          if (calls.length === 1) throw new Error('acquirer connection reset');
          return { valid: true };
        },
      });
      expect(await handle.executeUpdate(confirmWithPasswordUpdate, password('dcf_1'))).toEqual({ outcome: 'completed', attempts_left: 3 });
      expect(calls.map(({ name, attempt }) => [name, attempt])).toEqual([
        ['verifyDepositPassword', 1],
        ['verifyDepositPassword', 2],
        ['completeDeposit', 1],
      ]);
    });

    it('fails only the Update an activity refuses for good (no recorded confirmation): no attempt counted, still pending', async () => {
      const { handle, calls } = await start('password', {
        verifyDepositPassword: async ({ confirmation_id }) => {
          if (confirmation_id === 'dcf_forged') throw ApplicationFailure.nonRetryable('no recorded confirmation', 'CONFIRMATION_NOT_RECORDED');
          return { valid: true };
        },
      });
      // The activity's own failure reaches the caller as it is: the workflow does not wrap it again.
      expect(await failureOf(handle.executeUpdate(confirmWithPasswordUpdate, password('dcf_forged')))).toBe('CONFIRMATION_NOT_RECORDED');
      expect(await handle.query(depositStateQuery)).toEqual({ state: 'pending', wrong_passwords: 0 });
      expect(await handle.executeUpdate(confirmWithPasswordUpdate, password('dcf_1'))).toEqual({ outcome: 'completed', attempts_left: 3 });
      expect(names(calls)).toEqual(['verifyDepositPassword', 'verifyDepositPassword', 'completeDeposit']);
    });

    it('refuses a confirmation waiting its turn once the one before it cancelled the deposit', async () => {
      const held = deferred();
      const { handle, calls } = await start(
        'password',
        {
          verifyDepositPassword: async () => {
            await held.promise;
            return { valid: false };
          },
        },
        { max_password_attempts: 1 },
      );
      const first = handle.executeUpdate(confirmWithPasswordUpdate, password('dcf_1', 'sealed-wrong'));
      await eventually(() => calls.length === 1);
      const second = await handle.startUpdate(confirmWithPasswordUpdate, { ...password('dcf_2'), waitForStage: WorkflowUpdateStage.ACCEPTED });
      held.resolve();
      expect(await first).toEqual({ outcome: 'cancelled', attempts_left: 0 });
      expect(await failureOf(second.result())).toBe('DEPOSIT_CANCELLED');
      expect(names(calls)).toEqual(['verifyDepositPassword', 'closeDeposit']);
    });
  });

  describe('card form', () => {
    it('completes an approved card, then captures its authorization', async () => {
      const { reference, handle, calls } = await start('card_form');
      expect(await handle.executeUpdate(submitCardConfirmationUpdate, card('dcf_1'))).toEqual({ outcome: 'completed', attempts_left: 3 });
      expect(await handle.result()).toEqual({ state: 'completed' });
      expect(calls.map(({ name, input }) => [name, input])).toEqual([
        ['authorizeDepositCard', { reference, confirmation_id: 'dcf_1' }],
        ['completeDeposit', { reference, confirmation_id: 'dcf_1' }],
        ['settleDepositCard', { reference, authorization_id: 'AUTH-1', capture: true }],
      ]);
    });

    it('with a capture delay, answers the payer at the completion and captures once the delay passed', async () => {
      const { reference, handle, calls } = await start('card_form', {}, { capture_delay_seconds: 1 });
      expect(await handle.executeUpdate(submitCardConfirmationUpdate, card('dcf_1'))).toEqual({ outcome: 'completed', attempts_left: 3 });
      // Answered before the capture: the window in which a refund reverses the authorization instead.
      expect(names(calls)).toEqual(['authorizeDepositCard', 'completeDeposit']);
      expect(await handle.query(depositStateQuery)).toEqual({ state: 'completed', wrong_passwords: 0 });
      const started = Date.now();
      expect(await handle.result()).toEqual({ state: 'completed' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(500);
      expect(calls.at(-1)).toEqual(expect.objectContaining({ name: 'settleDepositCard', input: { reference, authorization_id: 'AUTH-1', capture: true } }));
    });

    it('with a capture delay, still reverses at once when the completion failed', async () => {
      const { handle, calls } = await start('card_form', { completeDeposit: async () => ({ state: 'failed' }) }, { capture_delay_seconds: 3600 });
      expect(await handle.executeUpdate(submitCardConfirmationUpdate, card('dcf_1'))).toEqual({ outcome: 'failed', attempts_left: 3 });
      expect(await handle.result()).toEqual({ state: 'failed' });
      expect(calls.at(-1)).toMatchObject({ name: 'settleDepositCard', input: { authorization_id: 'AUTH-1', capture: false } });
    });

    it('reverses the authorization when the completion failed (a preorder paid meanwhile)', async () => {
      const { handle, calls } = await start('card_form', { completeDeposit: async () => ({ state: 'failed' }) });
      expect(await handle.executeUpdate(submitCardConfirmationUpdate, card('dcf_1'))).toEqual({ outcome: 'failed', attempts_left: 3 });
      expect(await handle.result()).toEqual({ state: 'failed' });
      expect(calls.at(-1)).toMatchObject({ name: 'settleDepositCard', input: { authorization_id: 'AUTH-1', capture: false } });
    });

    it('settles nothing when the approval names no authorization', async () => {
      const { handle, calls } = await start('card_form', { authorizeDepositCard: async () => ({ approved: true }) });
      expect(await handle.executeUpdate(submitCardConfirmationUpdate, card('dcf_1'))).toEqual({ outcome: 'completed', attempts_left: 3 });
      expect(names(calls)).toEqual(['authorizeDepositCard', 'completeDeposit']);
    });

    it('ends a declined card as declined, capturing nothing', async () => {
      const { reference, handle, calls } = await start('card_form', { authorizeDepositCard: async () => ({ approved: false }) });
      expect(await handle.executeUpdate(submitCardConfirmationUpdate, card('dcf_1'))).toEqual({ outcome: 'declined', attempts_left: 3 });
      expect(await handle.result()).toEqual({ state: 'declined' });
      expect(calls.map(({ name, input }) => [name, input])).toEqual([
        ['authorizeDepositCard', { reference, confirmation_id: 'dcf_1' }],
        ['closeDeposit', { reference, state: 'declined', confirmation_id: 'dcf_1' }],
      ]);
    });

    it('never retries a failed authorization (it could charge twice); the payer may submit again', async () => {
      const { handle, calls } = await start('card_form', {
        authorizeDepositCard: async () => {
          if (calls.length === 1) throw new Error('acquirer timed out');
          return { approved: true, authorization_id: 'AUTH-2' };
        },
      });
      expect(await failureOf(handle.executeUpdate(submitCardConfirmationUpdate, card('dcf_1')))).toBe('Error');
      expect(await handle.query(depositStateQuery)).toEqual({ state: 'pending', wrong_passwords: 0 });
      expect(await handle.executeUpdate(submitCardConfirmationUpdate, card('dcf_2'))).toEqual({ outcome: 'completed', attempts_left: 3 });
      expect(calls.map(({ name, attempt }) => [name, attempt])).toEqual([
        ['authorizeDepositCard', 1],
        ['authorizeDepositCard', 1],
        ['completeDeposit', 1],
        ['settleDepositCard', 1],
      ]);
    });

    it('lets exactly one of two concurrent submissions run; the other is refused once the deposit completed', async () => {
      const held = deferred();
      const { handle, calls } = await start('card_form', {
        authorizeDepositCard: async () => {
          await held.promise;
          return { approved: true, authorization_id: 'AUTH-1' };
        },
      });
      const first = handle.executeUpdate(submitCardConfirmationUpdate, card('dcf_1'));
      await eventually(() => calls.length === 1);
      // Accepted by the validator while the first runs: it waits for its turn, then re-checks the state.
      const second = await handle.startUpdate(submitCardConfirmationUpdate, { ...card('dcf_2'), waitForStage: WorkflowUpdateStage.ACCEPTED });
      held.resolve();
      expect(await first).toEqual({ outcome: 'completed', attempts_left: 3 });
      expect(await failureOf(second.result())).toBe('DEPOSIT_COMPLETED');
      expect(names(calls)).toEqual(['authorizeDepositCard', 'completeDeposit', 'settleDepositCard']);
    });
  });

  describe('validators', () => {
    it('refuses a confirmation of the other method before anything runs', async () => {
      const byForm = await start('card_form');
      expect(await failureOf(byForm.handle.executeUpdate(confirmWithPasswordUpdate, password('dcf_1')))).toBe('DEPOSIT_CONFIRMED_BY_FORM');
      const byPassword = await start('password');
      expect(await failureOf(byPassword.handle.executeUpdate(submitCardConfirmationUpdate, card('dcf_1')))).toBe('DEPOSIT_CONFIRMED_BY_PASSWORD');
      expect([...byForm.calls, ...byPassword.calls]).toEqual([]);
      expect(await byForm.handle.query(depositStateQuery)).toEqual({ state: 'pending', wrong_passwords: 0 });
    });

    it('refuses an Update sent straight to Temporal that names no confirmation, and runs nothing for it', async () => {
      const { handle, calls } = await start('password');
      // No argument at all, none of the fields, an empty id, a password that is not a sealed string.
      const malformed: unknown[][] = [[], [{}], [{ confirmation_id: '', sealed_password: 'sealed-right' }], [{ confirmation_id: 'dcf_1' }], [{ confirmation_id: 'dcf_1', sealed_password: 7 }]];
      for (const args of malformed) {
        expect(await failureOf(handle.executeUpdate('confirmWithPassword', { args: args as [unknown] }))).toBe('CONFIRMATION_NOT_RECORDED');
      }
      const cardForm = await start('card_form');
      expect(await failureOf(cardForm.handle.executeUpdate('submitCardConfirmation', { args: [] as unknown[] as [unknown] }))).toBe('CONFIRMATION_NOT_RECORDED');
      expect([...calls, ...cardForm.calls]).toEqual([]);
      // The deposit is untouched: the rightful confirmation still completes it.
      expect(await handle.executeUpdate(confirmWithPasswordUpdate, password('dcf_1'))).toEqual({ outcome: 'completed', attempts_left: 3 });
    }, 30_000);
  });

  describe('lifetime', () => {
    it('expires at expires_at when nobody confirms; a confirmation afterwards finds the run closed and runs nothing', async () => {
      const { reference, handle, calls } = await start('password', {}, { expires_at: inMs(300) });
      expect(await handle.result()).toEqual({ state: 'expired' });
      expect(calls.map(({ name, input }) => [name, input])).toEqual([['closeDeposit', { reference, state: 'expired' }]]);
      await expect(handle.executeUpdate(confirmWithPasswordUpdate, password('dcf_1'))).rejects.toThrow();
      expect(names(calls)).toEqual(['closeDeposit']);
    });

    it('expires after ttl_seconds when its input has no expires_at', async () => {
      const { handle } = await start('card_form', {}, { expires_at: undefined, ttl_seconds: 0.3 });
      expect(await handle.result()).toEqual({ state: 'expired' });
    });

    it('lets a confirmation already running finish when the timer fires, and refuses one that arrives after it', async () => {
      const held = deferred();
      const { handle, calls } = await start('password', {
        verifyDepositPassword: async () => {
          await held.promise;
          return { valid: true };
        },
      }, { expires_at: inMs(3000) });
      const running = handle.executeUpdate(confirmWithPasswordUpdate, password('dcf_1'));
      await eventually(() => calls.length === 1);
      await eventually(() => historyHas(handle, 'TIMER_FIRED'));
      // The timer won against this one: refused by the validator, nothing runs for it.
      expect(await failureOf(handle.executeUpdate(confirmWithPasswordUpdate, password('dcf_2')))).toBe('DEPOSIT_EXPIRED');
      held.resolve();
      // The confirmation accepted before the timer fired won against it.
      expect(await running).toEqual({ outcome: 'completed', attempts_left: 3 });
      expect(await handle.result()).toEqual({ state: 'completed' });
      expect(names(calls)).toEqual(['verifyDepositPassword', 'completeDeposit']);
    });
  });
});
