/**
 * InstrumentService (interface "Area C" tokenize_local_card, tokenize_bank_account, tokenize_visa_master;
 * platform decisions §7): decrypts the encrypted fields with the platform private key
 * (src/crypto/field-decryption.ts), checks them, and vaults the instrument (store.ts). Tokenize calls are
 * authenticated with `requireMerchant` exactly like WalletService (the signed body must say every field); the user
 * must be one of the calling merchant's users (else 400 `user_id` "The selected user_id is invalid.", as for any
 * unknown user).
 *
 * Every failing field is reported at once (400, field → messages). Card and account numbers are logged only as
 * their last 4 digits; security codes are checked and dropped.
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { sha256Hex } from '../crypto/secrets';
import { clientAddressOf } from '../rpc/client-address';
import { fieldNotDecryptable, tryDecryptField, type FieldRule } from '../crypto/field-decryption';
import { DomainError, invalidFields, reasonError, type FieldViolations } from '../errors';
import { INSTRUMENT_REASONS } from './reasons';
import type { InstrumentService } from '../gen/payments/instrument/v1/instrument_pb';
import type { PlatformDeps } from '../platform-deps';
import { problem } from '../field-problems';
import { isHttpUrl } from '../web/url';
import { merchantUser } from '../onboarding/users';
import { startWebhookDeliveriesAfterCommit } from '../webhooks';
import { activationCode, activationCodeSha256, activationUrl, qrImageUrl, recordActivationCallBack } from './activation';
import {
  cardBrand,
  findBankAccountByToken,
  findByActivationCodeHash,
  holderNameOf,
  insertInstrument,
  isExpired,
  markActivated,
  newInstrumentToken,
  normalizeAccountNumber,
  normalizeCardNumber,
  parseExpiry,
  validSecurityCode,
  type Expiry,
  type Instrument,
} from './store';


function add(problems: FieldViolations, field: string, message: string): void {
  (problems[field] ??= []).push(message);
}

/** Runs a check that may throw a DomainError with fields; merges them into `problems`. */
async function collect<T>(problems: FieldViolations, check: () => Promise<T> | T): Promise<T | undefined> {
  try {
    return await check();
  } catch (error) {
    if (!(error instanceof DomainError) || Object.keys(error.fields).length === 0 || error.kind === 'unauthenticated') throw error;
    for (const [field, messages] of Object.entries(error.fields)) for (const message of messages) add(problems, field, message);
    return undefined;
  }
}

function finish(problems: FieldViolations): void {
  if (Object.keys(problems).length > 0) throw invalidFields(problems);
}

/** The card inside a decrypted sourceOfFunds, checked (messages on `sourceOfFunds`). The security code is dropped. */
export function readSourceOfFunds(plaintext: string, problems: FieldViolations): { number: string; expiry: Expiry } | undefined {
  const field = 'sourceOfFunds';
  let value: unknown;
  try {
    value = JSON.parse(plaintext);
  } catch {
    value = undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return void add(problems, field, problem('source_of_funds_json'));
  const source = value as { type?: unknown; provided?: { card?: unknown } };
  if (source.type !== 'CARD') add(problems, field, problem('source_of_funds_type'));
  const card = source.provided && typeof source.provided === 'object' ? source.provided.card : undefined;
  if (card === null || typeof card !== 'object' || Array.isArray(card)) return void add(problems, field, problem('source_of_funds_card'));
  const { number: numberText, securityCode, expiry: expiryValue } = card as { number?: unknown; securityCode?: unknown; expiry?: unknown };
  const number = typeof numberText === 'string' ? normalizeCardNumber(numberText) : undefined;
  if (!number) add(problems, field, problem('card_number'));
  if (!validSecurityCode(securityCode)) add(problems, field, problem('security_code'));
  const expiryObject = expiryValue && typeof expiryValue === 'object' ? (expiryValue as { month?: unknown; year?: unknown }) : {};
  const expiry = parseExpiry(expiryObject.month, expiryObject.year);
  if (!expiry) add(problems, field, problem('card_expiry'));
  else if (isExpired(expiry)) add(problems, field, problem('card_expired'));
  return number && expiry && source.type === 'CARD' && !problems[field] ? { number, expiry } : undefined;
}

export function createInstrumentService(deps: PlatformDeps): ServiceImpl<typeof InstrumentService> {
  const { database, keys } = deps;

  // The merchant each request acts for is the one its ActionAuth proves (src/merchant-auth), never an asserted id.
  const { requireMerchant } = deps.merchantAuth;

  async function checkBank(bankId: string, problems: FieldViolations): Promise<string | undefined> {
    const bank = /^\d{1,18}$/.test(bankId) ? await database('banks').where({ id: bankId }).first('id') : undefined;
    if (!bank) return void add(problems, 'bank_id', problem('not_found'));
    return bankId;
  }

  /**
   * The value of an encrypted field by its rule, or undefined with the field's one error added to `problems`.
   *
   * No padding oracle (platform decisions §7): a value that does not decrypt and a value that decrypts to something
   * the rule refuses (a bad card number, a JSON of the wrong shape, a garbage name) answer the very same error
   * (problem `not_decryptable`) after the same decryptions (src/crypto/field-decryption.ts).
   */
  function decryptChecked<T>(field: string, value: string, problems: FieldViolations, rule: FieldRule<T>): T | undefined {
    const checked = tryDecryptField(keys.fieldEncryption, value, rule);
    if (checked === undefined) add(problems, field, fieldNotDecryptable(field));
    return checked;
  }

  /** A sourceOfFunds plaintext's card, or undefined when anything in it is refused. */
  const sourceOfFundsRule: FieldRule<{ number: string; expiry: Expiry }> = (plaintext) => readSourceOfFunds(plaintext, {});

  /**
   * An activation page asked for with an unknown code or token: counted per client address (src/abuse), so the
   * pages cannot be used to guess codes. @throws DomainError RATE_LIMITED once the address is past its failures
   */
  async function activationMissed(presented: string, context: HandlerContext): Promise<void> {
    const address = clientAddressOf(context);
    const credential = sha256Hex(presented).slice(0, 32);
    await (await deps.abuse.beginAttempt('activation', credential, address)).failed();
  }

  function logRequest(merchantId: string, kind: string, userId: string): void {
    deps.logger.debug({ merchant_id: merchantId, kind, user_id: userId }, 'tokenize request');
  }

  function logTokenized(instrument: Instrument): void {
    deps.logger.info(
      { instrument_id: instrument.id, merchant_id: instrument.merchantId, kind: instrument.kind, brand: instrument.brand, last4: instrument.last4 },
      'instrument tokenized',
    );
  }

  return {
    async tokenizeLocalCard(request, context) {
      const { merchantId } = await requireMerchant(request, context);
      logRequest(merchantId, 'local_card', request.userId);
      const problems: FieldViolations = {};
      await collect(problems, () => merchantUser(database, merchantId, request.userId, 'user_id'));
      const bankId = await checkBank(request.bankId, problems);
      const holder = decryptChecked('holder_name', request.holderName, problems, holderNameOf);
      const number = decryptChecked('bank_code', request.bankCode, problems, normalizeCardNumber);
      finish(problems);
      const instrument = await insertInstrument(deps, {
        merchantId,
        userId: request.userId,
        kind: 'local_card',
        holderName: holder!,
        number: number!,
        brand: cardBrand(number!),
        bankId,
      });
      logTokenized(instrument);
      return { token: instrument.token };
    },

    async tokenizeBankAccount(request, context) {
      const { merchantId } = await requireMerchant(request, context);
      logRequest(merchantId, 'bank_account', request.userId);
      const problems: FieldViolations = {};
      await collect(problems, () => merchantUser(database, merchantId, request.userId, 'user_id'));
      const bankId = await checkBank(request.bankId, problems);
      const holder = decryptChecked('holder_name', request.holderName, problems, holderNameOf);
      const number = decryptChecked('bank_number', request.bankNumber, problems, normalizeAccountNumber);
      if (!isHttpUrl(request.callBack)) add(problems, 'call_back', problem('format'));
      else if (deps.outbound.checkUrl(request.callBack)) add(problems, 'call_back', problem('public_url'));
      finish(problems);
      const token = newInstrumentToken();
      const instrument = await insertInstrument(deps, {
        token,
        merchantId,
        userId: request.userId,
        kind: 'bank_account',
        holderName: holder!,
        number: number!,
        bankId,
        status: 'pending_activation',
        activationCodeSha256: activationCodeSha256(activationCode(keys.dataKey, token)),
        callBackUrl: request.callBack,
      });
      logTokenized(instrument);
      return { token, bankNumberLast4: instrument.last4, qrImageUrl: qrImageUrl(deps, token), needVerify: true };
    },

    async tokenizeVisaMaster(request, context) {
      const { merchantId } = await requireMerchant(request, context);
      logRequest(merchantId, 'visa_master', request.userId);
      const problems: FieldViolations = {};
      await collect(problems, () => merchantUser(database, merchantId, request.userId, 'user_id'));
      const holder = decryptChecked('holder_name', request.holderName, problems, holderNameOf);
      const card = decryptChecked('sourceOfFunds', request.sourceOfFunds, problems, sourceOfFundsRule);
      finish(problems);
      const instrument = await insertInstrument(deps, {
        merchantId,
        userId: request.userId,
        kind: 'visa_master',
        holderName: holder!,
        number: card!.number,
        brand: cardBrand(card!.number),
        expiry: card!.expiry,
      });
      logTokenized(instrument);
      return { token: instrument.token };
    },

    /** @throws DomainError ACTIVATION_NOT_FOUND, RATE_LIMITED (an address past its failed activation lookups) */
    async getBankAccountActivation(request, context) {
      const hash = request.activationCode ? activationCodeSha256(request.activationCode) : undefined;
      const instrument = request.token
        ? await findBankAccountByToken(database, request.token)
        : hash
          ? await findByActivationCodeHash(database, hash)
          : undefined;
      if (!instrument) {
        await activationMissed(request.token || request.activationCode, context);
        throw reasonError(INSTRUMENT_REASONS, 'ACTIVATION_NOT_FOUND', 'activation not found', { token: [problem('activation_not_found')] });
      }
      const bank = instrument.bankId === null ? undefined : await database('banks').where({ id: instrument.bankId }).first('name');
      return {
        activationUrl: activationUrl(deps, activationCode(keys.dataKey, instrument.token)),
        bankNumberLast4: instrument.last4,
        bankName: (bank as { name?: string } | undefined)?.name ?? '',
        activated: instrument.status === 'active',
      };
    },

    /** @throws DomainError ACTIVATION_NOT_FOUND, RATE_LIMITED (an address past its failed activation lookups) */
    async activateBankAccount(request, context) {
      const hash = activationCodeSha256(request.activationCode);
      const instrument = hash ? await findByActivationCodeHash(database, hash) : undefined;
      if (!instrument) {
        await activationMissed(request.activationCode, context);
        throw reasonError(INSTRUMENT_REASONS, 'ACTIVATION_NOT_FOUND', 'activation not found', { activation_code: [problem('activation_not_found')] });
      }
      // The activation and its call-back event commit together; the event's durable delivery starts after.
      const { activatedNow, webhookIds } = await database.transaction(async (trx) => {
        if (!(await markActivated(trx, instrument.id))) return { activatedNow: false, webhookIds: [] };
        const callBack = await recordActivationCallBack(trx, { ...instrument, status: 'active' }, instrument.callBackUrl);
        return { activatedNow: true, webhookIds: callBack ? [callBack] : [] };
      });
      if (activatedNow) {
        deps.logger.info({ instrument_id: instrument.id, merchant_id: instrument.merchantId, last4: instrument.last4 }, 'bank account activated');
        await startWebhookDeliveriesAfterCommit(deps, webhookIds);
      }
      const bank = instrument.bankId === null ? undefined : await database('banks').where({ id: instrument.bankId }).first('name');
      return { bankNumberLast4: instrument.last4, bankName: (bank as { name?: string } | undefined)?.name ?? '', activatedNow };
    },
  };
}
