/** Instruments: the card and bank-account vault and its number rules, tokenization, bank-account QR activation. */
export * from './store';
export { createInstrumentService, readSourceOfFunds } from './service';
export { activationCode, activationUrl, qrImageUrl, recordActivationCallBack, ACTIVATED_EVENT } from './activation';
