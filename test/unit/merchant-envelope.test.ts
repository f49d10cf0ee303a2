/** Area C error table (rest-facade/merchant/envelope.ts): statuses, envelopes, the 500 that hides internals. */
import { Code, ConnectError } from '@connectrpc/connect';
import { answerForError } from '../../rest-facade/merchant/contract';
import { invalidFields, reasonError } from '../../src/errors';
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
