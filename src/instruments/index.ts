/** Instruments: the card and bank-account vault, tokenization, bank-account QR activation. */
export * from './store';
export * from './cards';
export { createInstrumentService, readSourceOfFunds } from './service';
export { activationCode, activationUrl, qrImageUrl, recordActivationCallBack, ACTIVATED_EVENT } from './activation';
