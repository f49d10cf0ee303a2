/**
 * Every reason the TransferService can answer (docs/architecture.md "One error model"): the pre-transfer flow's own
 * (contract.ts, also its workflow's and activities' failure types), the ledger's (a hold the ledger refuses other than
 * for the float's balance) and the platform-wide ones (authentication, rate limits, request validation,
 * infrastructure). Area A's answer table (area-a.ts) is a `Record` over this union: a reason added to any of these
 * tables does not compile until Area A answers it.
 */
import { COMMON_REASONS } from '../../errors';
import { LEDGER_REASONS } from '../../ledger/reasons';
import { PRE_TRANSFER_REASONS } from './contract';

export const TRANSFER_SERVICE_REASONS = { ...PRE_TRANSFER_REASONS, ...LEDGER_REASONS, ...COMMON_REASONS } as const;
export type TransferServiceReason = keyof typeof TRANSFER_SERVICE_REASONS;
