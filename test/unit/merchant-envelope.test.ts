/** Area C error table (rest-facade/merchant/envelope.ts): statuses, envelopes, the 500 that hides internals. */
import { Code, ConnectError } from '@connectrpc/connect';
import { answerForError } from '../../rest-facade/merchant/contract';
import { invalidFields, reasonError, type DomainError } from '../../src/errors';
import { problem } from '../../src/field-problems';
import { checkLoginTimestamp } from '../../src/merchant-auth';
import { parseJsonLossless } from '../../src/money';
import { WALLET_REASONS } from '../../src/flows/wallet/contract';
import { MERCHANT_AUTH_REASONS } from '../../src/merchant-auth/reasons';
import { toConnectError } from '../../src/rpc/errors';

describe('Area C answerForError', () => {
  it('maps field violations to 400 Bad Request listing every field', () => {
    const answer = answerForError(toConnectError(invalidFields({ amount: ['bad'], currency: ['worse'] })));
    expect(answer).toEqual({
      status: 400,
      isFault: false,
      body: { success: false, code: 400, message: 'Bad Request', error: { amount: ['bad'], currency: ['worse'] } },
    });
  });

  it('maps unauthenticated to 401 Unauthorized', () => {
    const answer = answerForError(toConnectError(reasonError(MERCHANT_AUTH_REASONS, 'SESSION_EXPIRED', 'x', { token: ['expired'] })));
    expect(answer.status).toBe(401);
    expect(answer.body).toEqual({ success: false, code: 401, message: 'Unauthorized', error: { token: ['expired'] } });
  });

  it('falls back to the reason field when a failure has no fields', () => {
    const answer = answerForError(toConnectError(reasonError(WALLET_REASONS, 'INSUFFICIENT_FUNDS', 'insufficient funds')));
    expect(answer.body).toEqual({ success: false, code: 400, message: 'Bad Request', error: { amount: ['insufficient funds'] } });
  });

  it('answers any unexpected fault with the 500 envelope and no internal message', () => {
    for (const error of [new Error('db password wrong at host x'), new ConnectError('internal error', Code.Internal), new ConnectError('x', Code.Unavailable)]) {
      const answer = answerForError(error);
      expect(answer.isFault).toBe(true);
      expect(answer.status).toBe(500);
      expect(answer.body).toEqual({
        success: false,
        code: 500,
        message: 'Internal Server Error',
        error: { server: ['An unexpected error occurred. Please try again later.'] },
      });
    }
  });
});

describe('checkLoginTimestamp (the optional login timestamp, docs/area-c.md "Login replays")', () => {
  const now = 1_795_687_200_000;
  const refusal = (parameters: Record<string, unknown>) => {
    try {
      checkLoginTimestamp(parameters, 300, now);
    } catch (error) {
      return { reason: (error as DomainError).reason, fields: (error as DomainError).fields };
    }
    throw new Error('not refused');
  };

  it('is never required: absent, null or empty (the canonical string drops them alike) is no timestamp', () => {
    for (const parameters of [{}, { timestamp: null }, { timestamp: '' }]) expect(checkLoginTimestamp(parameters, 300, now)).toBeUndefined();
  });

  it('answers the seconds of one sent within the window, as a JSON integer or a digit string', () => {
    expect(checkLoginTimestamp({ timestamp: parseJsonLossless('1795687100') }, 300, now)).toBe(1_795_687_100);
    expect(checkLoginTimestamp({ timestamp: '1795687500' }, 300, now)).toBe(1_795_687_500);
  });

  it('refuses one sent outside the window, or that is no Unix time in seconds, on the field timestamp', () => {
    expect(refusal({ timestamp: '1795686899' })).toEqual({ reason: 'LOGIN_TIMESTAMP_INVALID', fields: { timestamp: [problem('timestamp_window', 300)] } });
    expect(refusal({ timestamp: String(now) })).toEqual({ reason: 'LOGIN_TIMESTAMP_INVALID', fields: { timestamp: [problem('timestamp_window', 300)] } });
    expect(refusal({ timestamp: '2026-01-01T00:00:00Z' })).toEqual({ reason: 'LOGIN_TIMESTAMP_INVALID', fields: { timestamp: [problem('integer')] } });
  });
});
