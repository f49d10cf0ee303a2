/**
 * The dependencies every service and activity receives, built once per process by the composition root
 * (`src/platform.ts`). A leaf module: it imports only types, each from a module that does not import this one
 * back (directly or through others; `npm run check:cycles` proves it), so any module may depend on it without a
 * cycle. A shape whose implementation takes these deps lives in a types module of its own
 * (`merchant-auth/types.ts`, `onboarding/types.ts`).
 */
import type { AbuseLimits } from './abuse';
import type { Acquirer } from './acquirers';
import type { BankRails } from './bank-rails';
import type { AuthChanges } from './auth-changes';
import type { Config } from './config';
import type { PlatformKeys } from './crypto/platform-keys';
import type { Knex } from './db/knex';
import type { IdempotencyStore } from './idempotency';
import type { Ledger } from './ledger/types';
import type { Logger } from './logger';
import type { PlatformMetrics } from './metrics';
import type { MerchantAuth } from './merchant-auth/types';
import type { TemporalHandle } from './temporal/client';
import type { Upstream } from './upstream/client';
import type { OutboundPolicy } from './web/outbound';

/** What services and activities are built from. One instance per process. */
export interface PlatformDeps {
  config: Config;
  database: Knex;
  temporal: TemporalHandle;
  logger: Logger;
  /** The only writer of balances (docs/architecture.md, "money moves only through src/ledger"). */
  ledger: Ledger;
  keys: PlatformKeys;
  /** The payin workflow-start outbox of an api-role process (absent elsewhere): B1 wakes it after a commit. */
  payinOutbox?: { wake(): void };
  /** Credential changes announced to every process (credential caches drop what changed). */
  authChanges: AuthChanges;
  /** Merchant authentication of every Area C service (its caches live as long as the process). */
  merchantAuth: MerchantAuth;
  /**
   * The card acquirer deposits authorize with, chosen by the composition root: the sandbox in test mode; none in live
   * mode until a real one is configured (card and bank deposits are then refused).
   */
  acquirer: Acquirer | undefined;
  /**
   * The upstream crypto provider the money-out flows ask (refunds; payouts), from UPSTREAM_REFUND_URL (or its default
   * under UPSTREAM_PAYIN_URL): undefined when none is configured (a refund is then refused).
   */
  upstream: Upstream | undefined;
  /** The bank rails Area C bank payouts are sent through: the sandbox in test mode; none in live mode until configured. */
  bankRails: BankRails | undefined;
  /** Clients' Idempotency-Keys of money-moving requests (first answer replayed). */
  idempotency: IdempotencyStore;
  /** Where the platform's own requests may go (merchant webhooks and call-backs), and the dispatcher they use. */
  outbound: OutboundPolicy;
  /** Lockouts after failed authentication, request-rate limits per caller, bounded password hashing. */
  abuse: AbuseLimits;
  /** The process's Prometheus metrics (src/metrics.ts), set by the composition root. */
  metrics?: PlatformMetrics;
  /**
   * Set only by bench/events.ts in its own process, never by configuration: while `eventsOff`, a payin's settlement
   * records its webhook without its event (the write path before events), the floor its settlement → webhook
   * throughput with events is measured against.
   */
  benchFloor?: { eventsOff: boolean };
}
