/**
 * The one validation style (src/field-rules.ts): rule tables read in order, answering field problem codes that each
 * area renders in its own documented words.
 */
import { readCreatePayin, renderFieldProblems as renderAreaB } from '../../rest-facade/payin/contract';
import { renderFieldProblems as renderAreaC } from '../../rest-facade/merchant/contract';
import { readTransfer } from '../../rest-facade/merchant/wallet-services';
import { DomainError } from '../../src/errors';
import { problem } from '../../src/field-problems';
import { amount, id, ifAbsent, present, readFields, refuse, text, withCheck } from '../../src/field-rules';
import { AREA_A_FIELD_RULES, AreaAFailure, describeProblem, readAreaA } from '../../src/flows/pre-transfer/area-a';
import { parseJsonLossless } from '../../src/money';

const body = (json: string) => parseJsonLossless(json) as Record<string, unknown>;

describe('field rules', () => {
  it('reads every field in order, each failing field with its code, and hands earlier values to later rules', () => {
    const rules = {
      currency: text({ required: true, max: 3 }),
      to: withCheck(id({ required: true }), (to, { read }) => (to === read.from ? refuse('same_user') : undefined)),
      from: id({ required: true }),
      amount: amount({ required: true, currency: (read) => (read.currency === 'USD' ? 'USD' : undefined) }),
      note: ifAbsent(text({ max: 5 }), ({ body: sent }) => (present(sent.amount) ? undefined : refuse('required_without', 'note', 'amount'))),
    };
    expect(readFields(rules, body('{"currency":"USD","to":"7","from":7,"amount":1.25}'))).toEqual({
      values: { currency: 'USD', to: '7', from: '7', amount: 125n, note: undefined },
      problems: {},
    });
    const refused = readFields(rules, body('{"currency":"DOLLARS","to":"x","amount":1.255,"note":"\\u0000"}'));
    expect(refused.problems).toEqual({
      currency: [problem('max_length', 3)],
      to: [problem('integer')],
      from: [problem('required')],
      amount: [problem('decimals', 2)],
      note: [problem('control_characters')],
    });
    expect(Object.keys(refused.problems)).toEqual(['currency', 'to', 'from', 'amount', 'note']);
    expect(readFields(rules, body('{"currency":"USD","to":1,"from":2}')).problems).toEqual({ amount: ['required'], note: ['required_without:note:amount'] });
  });

  it('renders one code in each area’s own words', () => {
    expect(describeProblem('out_trade_no', problem('max_length', 64))).toBe('out_trade_no must be at most 64 characters');
    expect(renderAreaB({ out_trade_no: [problem('max_length', 255)] })).toEqual({ out_trade_no: ['The out trade no must not be greater than 255 characters.'] });
    expect(renderAreaC({ out_trade_no: [problem('max_length', 64)] })).toEqual({ out_trade_no: ['The out_trade_no may not be greater than 64 characters.'] });
  });

  it('answers Area A’s first failing field, Area B’s and Area C’s every failing field', () => {
    const refusal = (() => {
      try {
        readAreaA(AREA_A_FIELD_RULES['create.unified.fundTransfer'], body('{"out_trade_no":"A-1","receiver_id":"-1","sender_name":"S","currency":"usd","amount":true}'));
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(AreaAFailure);
    expect((refusal as AreaAFailure).error).toEqual({ status: 400, error_code: 'VALIDATIONERROR', error_desc: 'out_trade_no must contain only letters and digits' });
    expect(readCreatePayin('{"amount":0,"currency":"USD","memo":5}')).toEqual({
      errors: { amount: [problem('min', '0.01')], currency: [problem('currency')], memo: [problem('string')], out_trade_no: [problem('required')] },
    });
    const sameUser = (() => {
      try {
        readTransfer(body('{"currency":"USD","from_user_id":1,"to_user_id":1,"amount":0,"fees_amount":1}'));
      } catch (error) {
        return error;
      }
    })();
    expect(sameUser).toBeInstanceOf(DomainError);
    expect((sameUser as DomainError).fields).toEqual({
      to_user_id: ['The to_user_id and from_user_id must be different.'],
      amount: ['The amount must be greater than 0.'],
      fees_currency: ['The fees_currency field is required when fees_amount is present.'],
    });
  });
});
