/**
 * Reasons typed on the wire (docs/architecture.md "One error model"): each service's reason table, the RPC failure
 * read for the services called, and each area's answer table over their union. The ledger's and onboarding's
 * reasons reach the façades mapped: never a 400 carrying the ledger's internal detail.
 */
import { answerForError, AREA_C_REASON_ERRORS } from '../../rest-facade/merchant/contract';
import { payinErrorFor } from '../../rest-facade/payin/contract';
import { reasonError } from '../../src/errors';
import { AREA_A_ERRORS, areaAErrorOf, SYSTEM_ERROR } from '../../src/flows/pre-transfer/area-a';
import { LEDGER_REASONS } from '../../src/ledger/reasons';
import { ONBOARDING_REASONS } from '../../src/onboarding/reasons';
import { TIMELINE_REASONS } from '../../src/timeline/reasons';
import { readRpcFailure, toConnectError } from '../../src/rpc/errors';
import { REASONS_BY_SERVICE } from '../../src/rpc/service-reasons';

describe('reasons by service', () => {
  it('each area answers every reason of every service it calls', () => {
    expect(Object.keys(AREA_A_ERRORS).sort()).toEqual(Object.keys(REASONS_BY_SERVICE.transfer).sort());
    const areaC = new Set(
      (['wallet', 'deposit', 'instrument', 'events', 'timeline', 'payout'] as const).flatMap((service) => Object.keys(REASONS_BY_SERVICE[service])),
    );
    expect(Object.keys(AREA_C_REASON_ERRORS).sort()).toEqual([...areaC].sort());
    for (const reason of Object.keys(REASONS_BY_SERVICE.payin) as Array<keyof typeof REASONS_BY_SERVICE.payin>) {
      expect(payinErrorFor('payins', reason, {}).status).toBeGreaterThanOrEqual(400);
    }
  });

  it('answers list_timeline\'s not-found in Area C words, the same for every reference it does not show', () => {
    const notFound = toConnectError(reasonError(TIMELINE_REASONS, 'PAYMENT_NOT_FOUND', 'no payment TRF1 for merchant 7'));
    expect(answerForError(notFound)).toEqual({
      status: 400,
      body: { success: false, code: 400, message: 'Bad Request', error: { reference: ['The selected reference is invalid.'] } },
      isFault: false,
    });
  });

  it('reads a failure with its reason typed by the service called; a reason outside its table is INTERNAL', () => {
    const refusal = toConnectError(reasonError(LEDGER_REASONS, 'ACCOUNT_NOT_FOUND', 'account not found: 42'));
    expect(readRpcFailure(refusal, 'payin').reason).toBe('ACCOUNT_NOT_FOUND');
    expect(readRpcFailure(refusal, 'instrument').reason).toBe('INTERNAL');
    expect(readRpcFailure(refusal).reason).toBe('ACCOUNT_NOT_FOUND');
  });

  it('answers the ledger’s and onboarding’s own refusals as faults, never with their internal detail', () => {
    const voided = reasonError(LEDGER_REASONS, 'PENDING_TRANSFER_ALREADY_VOIDED', 'pending transfer 7 was already voided');
    expect(answerForError(toConnectError(voided))).toMatchObject({ status: 500, isFault: true });
    const merchant = reasonError(ONBOARDING_REASONS, 'MERCHANT_NOT_FOUND', 'merchant not found');
    expect(answerForError(toConnectError(merchant))).toMatchObject({ status: 500, isFault: true });
    const unbalanced = reasonError(LEDGER_REASONS, 'UNBALANCED_POSTINGS', 'postings sum to 5', { postings: ['must sum to zero per currency'] });
    expect(areaAErrorOf(unbalanced)).toBe(SYSTEM_ERROR);
    expect(payinErrorFor('balance', 'ACCOUNT_NOT_FOUND', {})).toEqual({ status: 500, body: { success: false, message: 'Internal server error', errors: null } });
  });

  it('keeps the documented answers of the reasons a caller causes', () => {
    const short = reasonError(LEDGER_REASONS, 'INSUFFICIENT_FUNDS', 'insufficient funds', { amount: ['insufficient_funds'] });
    expect(answerForError(toConnectError(short)).body).toEqual({ success: false, code: 400, message: 'Bad Request', error: { amount: ['Insufficient balance.'] } });
    expect(areaAErrorOf(short)).toEqual({ status: 400, error_code: 'VALIDATIONERROR', error_desc: 'insufficient partner balance' });
  });
});
