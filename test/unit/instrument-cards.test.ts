/** The card rules of src/instruments/store.ts and src/sandbox/acquirer.ts: Luhn, brands, expiry, account numbers, sandbox. */
import fc from 'fast-check';
import {
  cardBrand,
  isExpired,
  lastFour,
  luhnValid,
  normalizeAccountNumber,
  normalizeCardNumber,
  parseExpiry,
  validSecurityCode,
} from '../../src/instruments/store';
import { authorizeCard, verifyOtp } from '../../src/sandbox/acquirer';

/** Appends the Luhn check digit to `body`. */
function withCheckDigit(body: string): string {
  for (let digit = 0; digit <= 9; digit += 1) if (luhnValid(body + digit)) return body + digit;
  throw new Error('unreachable');
}

describe('Luhn and card numbers', () => {
  it('accepts the well-known test numbers', () => {
    for (const number of ['4242424242424242', '4000000000000002', '5555555555554444', '378282246310005', '6011111111111117', '3530111333300000', '6200000000000005']) {
      expect(normalizeCardNumber(number)).toBe(number);
    }
  });

  it('drops spaces and hyphens between digits', () => {
    expect(normalizeCardNumber('4242 4242-4242 4242')).toBe('4242424242424242');
  });

  it('refuses a wrong check digit, letters, and lengths outside 12–19', () => {
    expect(normalizeCardNumber('4242424242424241')).toBeUndefined();
    expect(normalizeCardNumber('42424242424242a2')).toBeUndefined();
    expect(normalizeCardNumber('')).toBeUndefined();
    expect(normalizeCardNumber(withCheckDigit('4'.repeat(10)))).toBeUndefined(); // 11 digits
    expect(normalizeCardNumber(withCheckDigit('4'.repeat(11)))).toHaveLength(12);
    expect(normalizeCardNumber(withCheckDigit('4'.repeat(18)))).toHaveLength(19);
    expect(normalizeCardNumber(withCheckDigit('4'.repeat(19)))).toBeUndefined(); // 20 digits
  });

  it('a number with its check digit is valid; changing any one digit makes it invalid (property)', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^\d{11,18}$/), fc.nat(), fc.integer({ min: 1, max: 9 }), (body, position, delta) => {
        const number = withCheckDigit(body);
        expect(luhnValid(number)).toBe(true);
        const index = position % number.length;
        const changed = number.slice(0, index) + String((Number(number[index]) + delta) % 10) + number.slice(index + 1);
        expect(luhnValid(changed)).toBe(false);
      }),
    );
  });

  it('last four digits', () => {
    expect(lastFour('4242424242424242')).toBe('4242');
  });
});

describe('brands', () => {
  it.each([
    ['4242424242424242', 'visa'],
    ['5555555555554444', 'mastercard'],
    ['2223003122003222', 'mastercard'],
    ['378282246310005', 'amex'],
    ['341111111111111', 'amex'],
    ['3530111333300000', 'jcb'],
    ['6200000000000005', 'unionpay'],
    ['6011111111111117', 'discover'],
    ['6445644564456445', 'discover'],
    ['9999999999999995', 'other'],
  ])('%s is %s', (number, brand) => {
    expect(cardBrand(number)).toBe(brand);
  });
});

describe('expiry', () => {
  it('reads 2- and 4-digit years, month 1–12, strings or integers', () => {
    expect(parseExpiry('12', '30')).toEqual({ month: 12, year: 2030 });
    expect(parseExpiry(1, 2031)).toEqual({ month: 1, year: 2031 });
    expect(parseExpiry('07', '2029')).toEqual({ month: 7, year: 2029 });
    for (const [month, year] of [['0', '30'], ['13', '30'], ['1', '3'], ['1', '203'], ['a', '30'], [undefined, '30'], ['1.5', '30'], [1.5, 30]]) {
      expect(parseExpiry(month, year)).toBeUndefined();
    }
  });

  it('is valid through the last instant of the expiry month (UTC)', () => {
    const expiry = { month: 2, year: 2028 };
    expect(isExpired(expiry, new Date('2028-02-29T23:59:59.999Z'))).toBe(false);
    expect(isExpired(expiry, new Date('2028-03-01T00:00:00.000Z'))).toBe(true);
    expect(isExpired({ month: 12, year: 2027 }, new Date('2027-12-31T23:59:59Z'))).toBe(false);
    expect(isExpired({ month: 12, year: 2027 }, new Date('2028-01-01T00:00:00Z'))).toBe(true);
  });
});

describe('security codes and account numbers', () => {
  it('security code: 3 or 4 digits, a string', () => {
    expect(validSecurityCode('123')).toBe(true);
    expect(validSecurityCode('1234')).toBe(true);
    for (const value of ['12', '12345', '12a', 123, '', undefined]) expect(validSecurityCode(value)).toBe(false);
  });

  it('account number: 6–20 digits', () => {
    expect(normalizeAccountNumber('000123456')).toBe('000123456');
    expect(normalizeAccountNumber('001 234-567')).toBe('001234567');
    expect(normalizeAccountNumber('12345')).toBeUndefined();
    expect(normalizeAccountNumber('1'.repeat(21))).toBeUndefined();
    expect(normalizeAccountNumber('12345x')).toBeUndefined();
  });
});

describe('sandbox acquirer', () => {
  it('approves 4242…, declines 4000…0002, approves other valid numbers, declines invalid ones', () => {
    expect(authorizeCard('4242424242424242')).toEqual({ approved: true, message: 'OK' });
    expect(authorizeCard('4000000000000002')).toEqual({ approved: false, message: 'The card was declined.' });
    expect(authorizeCard('5555555555554444').approved).toBe(true);
    expect(authorizeCard('4242424242424241').approved).toBe(false);
  });

  it('verifies the sandbox OTP', () => {
    const config = { SANDBOX_OTP: '123456' };
    expect(verifyOtp(config, '123456')).toBe(true);
    expect(verifyOtp(config, '123457')).toBe(false);
    expect(verifyOtp(config, '')).toBe(false);
    expect(verifyOtp(config, '1234567')).toBe(false);
  });
});
