/**
 * The /do-action tokenize services of Area C (interface "Area C"; docs/area-c.md "Tokenization"): each
 * reads its fields (src/instruments/contract.ts), calls one InstrumentService RPC with the call's ActionAuth and
 * shapes `data`. Encrypted fields are passed on as received; only the service decrypts them.
 */
import { readTokenizeBankAccount, readTokenizeLocalCard, readTokenizeVisaMaster } from './instrument-fields';
import type { MerchantServiceTable } from './wallet-services';

export const instrumentMerchantServices: MerchantServiceTable = {
  /** data `{token}` */
  async tokenize_local_card({ body, caller, clients, callOptions }) {
    const fields = readTokenizeLocalCard(body);
    const answer = await clients.instrument.tokenizeLocalCard({ ...caller, ...fields }, callOptions);
    return { token: answer.token };
  },

  /** data `{token, bank_number: <last 4>, qr_image: <URL of the activation QR PNG>, need_verify: true}` */
  async tokenize_bank_account({ body, caller, clients, callOptions }) {
    const fields = readTokenizeBankAccount(body);
    const answer = await clients.instrument.tokenizeBankAccount({ ...caller, ...fields }, callOptions);
    return { token: answer.token, bank_number: answer.bankNumberLast4, qr_image: answer.qrImageUrl, need_verify: answer.needVerify };
  },

  /** data `{token}` */
  async tokenize_visa_master({ body, caller, clients, callOptions }) {
    const fields = readTokenizeVisaMaster(body);
    const answer = await clients.instrument.tokenizeVisaMaster({ ...caller, ...fields }, callOptions);
    return { token: answer.token };
  },
};
