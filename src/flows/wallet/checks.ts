/**
 * The WalletService's own checks of typed request fields (the façade's rules ran before; a trusted caller's request
 * did not pass them): each refusal is VALIDATION_FAILED with a field problem code on the field.
 */
import { invalidFields } from '../../errors';
import { problem } from '../../field-problems';
import { isCurrency, type Currency } from '../../money';
import { normalizePhone } from '../../onboarding';
import { WALLET_CURRENCIES } from './contract';

/** A currency Area C services accept, else `currency` on `field`. */
export function walletCurrency(value: string, field = 'currency'): Currency {
  if (!isCurrency(value) || !WALLET_CURRENCIES.includes(value)) throw invalidFields({ [field]: [problem('currency')] });
  return value;
}

/** A positive amount (minor units), else `positive` on `field`. */
export function positive(units: bigint, field: string): bigint {
  if (units <= 0n) throw invalidFields({ [field]: [problem('positive')] });
  return units;
}

/** A phone in any KH form, normalized; undefined when none was sent; else `format` on phone_number. */
export function phoneOrFail(text: string | undefined): string | undefined {
  if (text === undefined || text === '') return undefined;
  const phone = normalizePhone(text);
  if (!phone) throw invalidFields({ phone_number: [problem('format')] });
  return phone;
}
