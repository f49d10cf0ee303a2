/**
 * The registry of every reason a service can fail with, and its kind (docs/architecture.md, "One error model"):
 * each capability's reason table merged into one. A reason named by two tables has the same kind in both
 * (`mergeReasonTables` throws otherwise, when this module loads). Every table is a leaf module, so any module may
 * import this one.
 */
import { COMMON_REASONS, type DomainErrorKind, type ReasonKinds } from './errors';
import { DASHBOARD_REASONS } from './dashboard/reasons';
import { DEPOSIT_REASONS } from './flows/deposit/contract';
import { PAYIN_REASONS } from './flows/payin/contract';
import { PRE_TRANSFER_REASONS } from './flows/pre-transfer/contract';
import { REFUND_REASONS } from './flows/refund/contract';
import { PAYOUT_REASONS } from './flows/payout/contract';
import { WALLET_REASONS } from './flows/wallet/contract';
import { FIELD_DECRYPTION_REASONS } from './crypto/reasons';
import { IDEMPOTENCY_REASONS } from './idempotency/reasons';
import { INSTRUMENT_REASONS } from './instruments/reasons';
import { LEDGER_REASONS } from './ledger/reasons';
import { MERCHANT_AUTH_REASONS } from './merchant-auth/reasons';
import { MERCHANT_USER_REASONS, ONBOARDING_REASONS } from './onboarding/reasons';
import { PREORDER_REASONS } from './preorders/reasons';
import { WEBHOOK_REASONS } from './webhooks/contract';
import { TIMELINE_REASONS } from './timeline/reasons';
import { UPSTREAM_REASONS } from './upstream/reasons';

/** Every reason table, by the capability that owns it. */
export const REASON_TABLES = {
  common: COMMON_REASONS,
  ledger: LEDGER_REASONS,
  onboarding: ONBOARDING_REASONS,
  idempotency: IDEMPOTENCY_REASONS,
  preTransfer: PRE_TRANSFER_REASONS,
  payin: PAYIN_REASONS,
  webhooks: WEBHOOK_REASONS,
  wallet: WALLET_REASONS,
  preorders: PREORDER_REASONS,
  merchantAuth: MERCHANT_AUTH_REASONS,
  merchantUsers: MERCHANT_USER_REASONS,
  deposit: DEPOSIT_REASONS,
  instruments: INSTRUMENT_REASONS,
  dashboard: DASHBOARD_REASONS,
  fieldDecryption: FIELD_DECRYPTION_REASONS,
  timeline: TIMELINE_REASONS,
  refund: REFUND_REASONS,
  payout: PAYOUT_REASONS,
  upstream: UPSTREAM_REASONS,
} as const satisfies Record<string, ReasonKinds>;

type Tables = typeof REASON_TABLES;
/** Every reason of the platform. */
export type Reason = { [K in keyof Tables]: keyof Tables[K] }[keyof Tables] & string;

/**
 * Merges reason tables into one.
 * @throws Error naming the reason when two tables give it different kinds.
 */
export function mergeReasonTables(tables: Record<string, ReasonKinds>): Record<string, DomainErrorKind> {
  const merged: Record<string, DomainErrorKind> = {};
  const owner: Record<string, string> = {};
  for (const [name, table] of Object.entries(tables)) {
    for (const [reason, kind] of Object.entries(table)) {
      if (Object.hasOwn(merged, reason) && merged[reason] !== kind) {
        throw new Error(`reason ${reason} is ${merged[reason]} in ${owner[reason]} but ${kind} in ${name}`);
      }
      merged[reason] = kind;
      owner[reason] = name;
    }
  }
  return merged;
}

/** The registry: reason → kind. */
export const REASONS: Readonly<Record<Reason, DomainErrorKind>> = mergeReasonTables(REASON_TABLES) as Record<Reason, DomainErrorKind>;

/** The kind of a registered reason, or undefined. */
export function kindOfReason(reason: string): DomainErrorKind | undefined {
  return Object.hasOwn(REASONS, reason) ? REASONS[reason as Reason] : undefined;
}
