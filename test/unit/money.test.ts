import fc from 'fast-check';
import {
  AmountError,
  amountJson,
  CURRENCIES,
  decimalsOf,
  formatAmount,
  formatAmountShort,
  parseAmount,
  parseJsonLossless,
  percentOf,
  readAmount,
  stringifyJson,
  type Currency,
} from '../../src/money';

function problemOf(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    if (error instanceof AmountError) return error.problem;
    throw error;
  }
  return 'none';
}

describe('money (platform decisions §3)', () => {
  it('parses decimal text into minor units without floats', () => {
    expect(parseAmount('12.5', 'USD')).toBe(1250n);
    expect(parseAmount('0.01', 'USD')).toBe(1n);
    expect(parseAmount('0.000001', 'USDT')).toBe(1n);
    expect(parseAmount('1e2', 'USD')).toBe(10000n);
    expect(parseAmount('1.5E-1', 'USD')).toBe(15n);
    expect(parseAmount('0.1', 'USD') + parseAmount('0.2', 'USD')).toBe(parseAmount('0.3', 'USD'));
    expect(parseAmount('10.500', 'USD')).toBe(1050n);
  });

  it.each([
    ['abc', 'USD', 'not_a_number'],
    ['', 'USD', 'not_a_number'],
    [' 1', 'USD', 'not_a_number'],
    ['NaN', 'USD', 'not_a_number'],
    ['Infinity', 'USD', 'not_a_number'],
    ['0x10', 'USD', 'not_a_number'],
    ['1.001', 'USD', 'too_many_decimals'],
    ['0.0000001', 'USDT', 'too_many_decimals'],
    ['-1', 'USD', 'negative'],
    ['0', 'USD', 'zero'],
    ['0.00', 'USD', 'zero'],
    ['1e40', 'USD', 'too_large'],
    ['1e-40', 'USD', 'too_large'],
    ['99999999999999999', 'USD', 'too_large'],
  ] as Array<[string, Currency, string]>)('refuses %p in %s as %s', (text, currency, problem) => {
    expect(problemOf(() => parseAmount(text, currency))).toBe(problem);
  });

  it('accepts zero only when allowed', () => {
    expect(parseAmount('0', 'USD', { allowZero: true })).toBe(0n);
  });

  it('reads lossless JSON numbers, numeric strings, and refuses other types', () => {
    const body = parseJsonLossless('{"amount": 0.1, "big": 123456789012.34, "flag": true}') as Record<string, unknown>;
    expect(readAmount(body.amount, 'USD')).toBe(10n);
    expect(readAmount(body.big, 'USD')).toBe(12345678901234n);
    expect(readAmount('7.25', 'USD')).toBe(725n);
    expect(problemOf(() => readAmount(body.flag, 'USD'))).toBe('not_a_number');
    expect(problemOf(() => readAmount(null, 'USD'))).toBe('not_a_number');
  });

  it('names the field in the error', () => {
    const error = (() => {
      try {
        parseAmount('1.234', 'USD', { field: 'fees_amount' });
      } catch (caught) {
        return caught as AmountError;
      }
    })();
    expect(error?.fields).toEqual({ fees_amount: ['The fees_amount must have at most 2 decimal places.'] });
  });

  it('formats with all decimals, or the shortest exact form', () => {
    expect(formatAmount(1250n, 'USD')).toBe('12.50');
    expect(formatAmount(5n, 'USDT')).toBe('0.000005');
    expect(formatAmount(-5n, 'USD')).toBe('-0.05');
    expect(formatAmountShort(1250n, 'USD')).toBe('12.5');
    expect(formatAmountShort(100n, 'USD')).toBe('1');
    expect(stringifyJson({ amount: amountJson(1000010n, 'USDT'), units: 7n })).toBe('{"amount":1.00001,"units":7}');
  });

  it('rounds percentages half-up to the minor unit', () => {
    expect(percentOf(1000n, '1.0')).toBe(10n); // 1% of 10.00 = 0.10
    expect(percentOf(50n, '1')).toBe(1n); // 0.5 → 1
    expect(percentOf(49n, '1')).toBe(0n); // 0.49 → 0
    expect(percentOf(150n, '1')).toBe(2n); // 1.5 → 2
    expect(percentOf(12345n, '2.75')).toBe(339n); // 339.4875 → 339
    expect(percentOf(0n, '5')).toBe(0n);
    expect(() => percentOf(100n, '-1')).toThrow();
  });

  it('round-trips parse(format(units)) for every currency (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...CURRENCIES), fc.bigInt({ min: 1n, max: 10n ** 15n }), (currency, units) => {
        expect(parseAmount(formatAmount(units, currency), currency)).toBe(units);
        expect(parseAmount(formatAmountShort(units, currency), currency)).toBe(units);
        const json = stringifyJson({ amount: amountJson(units, currency) });
        const back = parseJsonLossless(json) as { amount: unknown };
        expect(readAmount(back.amount, currency)).toBe(units);
      }),
    );
  });

  it('never accepts more decimals than the currency has (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...CURRENCIES), fc.nat({ max: 10 ** 6 }), fc.integer({ min: 1, max: 9 }), (currency, whole, digit) => {
        const text = `${whole}.${'0'.repeat(decimalsOf(currency))}${digit}`;
        expect(problemOf(() => parseAmount(text, currency))).toBe('too_many_decimals');
      }),
    );
  });
});
