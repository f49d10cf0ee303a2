/**
 * Every reason the PayinService can answer (docs/architecture.md "One error model"): the payin flow's own
 * (contract.ts), the webhook deliveries' (the operator's redelivery), request idempotency's, the ledger's (balances)
 * and the platform-wide ones. Area B's answer table (rest-facade/payin/contract.ts) is a `Record` over this union.
 */
import { COMMON_REASONS } from '../../errors';
import { IDEMPOTENCY_REASONS } from '../../idempotency/reasons';
import { LEDGER_REASONS } from '../../ledger/reasons';
import { WEBHOOK_REASONS } from '../../webhooks/contract';
import { PAYIN_REASONS } from './contract';

export const PAYIN_SERVICE_REASONS = { ...PAYIN_REASONS, ...WEBHOOK_REASONS, ...IDEMPOTENCY_REASONS, ...LEDGER_REASONS, ...COMMON_REASONS } as const;
export type PayinServiceReason = keyof typeof PAYIN_SERVICE_REASONS;
