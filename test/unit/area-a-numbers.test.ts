/**
 * A signature covers a JSON number as the double its canonical string writes; the platform reads the decimal. The
 * gateway accepts a body only when the two are the same value (docs/signing-area-a.md, "The rules").
 */
import { numbersSignedExactly } from '../../src/flows/pre-transfer/gateway';
import { parseJsonLossless } from '../../src/money';

const body = (number: string) => parseJsonLossless(`{"amount":${number},"nested":{"list":[1,${number}]}}`);

describe('numbers a signature covers exactly', () => {
  it.each(['12.5', '12.50', '1.25e1', '125E-1', '600', '6e2', '0', '-0', '0.1', '0.000001', '1e21', '9999999999999.99', '-7.25'])('accepts %s', (number) => {
    expect(numbersSignedExactly(body(number))).toBe(true);
  });

  it.each(['1.2300000000000000001', '0.30000000000000004441', '12.345678901234567890', '9007199254740993', '1e400', '-1e400'])('refuses %s', (number) => {
    expect(numbersSignedExactly(body(number))).toBe(false);
  });

  it('reads strings and other values as they are', () => {
    expect(numbersSignedExactly(parseJsonLossless('{"amount":"1.2300000000000000001","ok":true,"none":null}'))).toBe(true);
  });
});
