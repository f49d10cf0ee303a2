/** Area C field rules (src/wallet/contract.ts): every failing field under its own name, amounts exact. */
import { DomainError } from '../../src/errors';
import { parseJsonLossless } from '../../src/money';
import {
  readCreateUser,
  readListBanks,
  readTransfer,
  readGeneratePreOrderToken,
} from '../../rest-facade/merchant/wallet-services';
import { MESSAGES } from '../../rest-facade/merchant/contract';

function body(text: string): Record<string, unknown> {
  return parseJsonLossless(text) as Record<string, unknown>;
}

function fieldsOf(run: () => unknown): Record<string, string[]> {
  try {
    run();
  } catch (error) {
    if (error instanceof DomainError) return error.fields;
    throw error;
  }
  throw new Error('expected a DomainError');
}

describe('wallet contract readers', () => {
  it('transfer: reads exact minor units', () => {
    expect(readTransfer(body('{"from_user_id":"1","to_user_id":2,"amount":10.25,"currency":"USD"}'))).toEqual({
      fromUserId: '1', toUserId: '2', amountUnits: 1025n, currency: 'USD', feesAmountUnits: 0n, feesCurrency: '',
    });
  });

  it('transfer: lists every failing field', () => {
    const fields = fieldsOf(() => readTransfer(body('{"from_user_id":"x","amount":"1.234","currency":"KHR","fees_amount":1}')));
    expect(Object.keys(fields).sort()).toEqual(['amount', 'currency', 'fees_currency', 'from_user_id', 'to_user_id']);
    expect(fields.fees_currency).toEqual([MESSAGES.feesCurrencyRequired]);
    expect(fields.to_user_id).toEqual([MESSAGES.required('to_user_id')]);
  });

  it('transfer: wrong types are refused', () => {
    const fields = fieldsOf(() => readTransfer(body('{"from_user_id":true,"to_user_id":{},"amount":[1],"currency":5}')));
    expect(fields).toEqual({
      currency: [MESSAGES.string('currency')],
      from_user_id: [MESSAGES.integer('from_user_id')],
      to_user_id: [MESSAGES.integer('to_user_id')],
      amount: ['The amount must be a number.'],
    });
  });

  it('create_user: one of phone_number and email is required', () => {
    const fields = fieldsOf(() => readCreateUser(body('{"first_name":"A","last_name":"B","address":"C","currency":"USD"}')));
    expect(fields).toEqual({ phone_number: [MESSAGES.phoneOrEmail], email: [MESSAGES.emailOrPhone] });
  });

  it('create_user: birthday must be a real date, email well formed', () => {
    const fields = fieldsOf(() =>
      readCreateUser(body('{"email":"nope","first_name":"A","last_name":"B","address":"C","currency":"USD","birthday":"2001-02-30"}')),
    );
    expect(fields).toEqual({ email: [MESSAGES.email('email')], birthday: [MESSAGES.date('birthday')] });
  });

  it('list_banks: defaults and bounds', () => {
    expect(readListBanks({})).toEqual({ page: 1, perPage: 20 });
    expect(fieldsOf(() => readListBanks(body('{"page":0,"per_page":101}')))).toEqual({
      page: [MESSAGES.min('page', 1)],
      per_page: [MESSAGES.maxValue('per_page', 100)],
    });
    expect(fieldsOf(() => readListBanks(body('{"page":"abc"}')))).toEqual({ page: [MESSAGES.integer('page')] });
  });

  it('generate_pre_order_token: commission_rate is a percent, urls are http(s)', () => {
    const fields = fieldsOf(() =>
      readGeneratePreOrderToken(
        body('{"out_trade_no":"o","seller_code":"s","description":"d","amount":1,"currency":"USD","commission_rate":101,"redirect_url":"ftp://x"}'),
      ),
    );
    expect(fields).toEqual({ commission_rate: [MESSAGES.percent('commission_rate')], redirect_url: [MESSAGES.url('redirect_url')] });
  });
});
