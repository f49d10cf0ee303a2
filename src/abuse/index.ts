/**
 * Abuse limits (docs/security.md "Abuse limits"): lockouts after failed authentication and request-rate limits
 * per authenticated caller, counted in PostgreSQL by rate-limiter-flexible (table `rate_limits`), so every process
 * of the platform shares them.
 *
 *   failures per credential   AUTH_FAILURES_PER_CREDENTIAL (10) per AUTH_FAILURE_WINDOW_SECONDS (60): one more
 *                             attempt with that credential, right or wrong, is refused until the window ends
 *   failures per address      AUTH_FAILURES_PER_ADDRESS (50) per window and door, whatever the credentials tried
 *   requests per caller       REQUESTS_PER_CALLER_PER_MINUTE (6000) for a verified partner or merchant; 0 = off
 *
 * A locked or limited call is refused before its credential is checked, with RATE_LIMITED and the seconds until
 * it may be tried again (each area answers 429 with `Retry-After`). The answer is the same for a credential that
 * exists and one that does not. A successful authentication clears its credential's failures, not its address's.
 *
 * Password hashing runs under a bounded concurrency (`hashingSlots`), so a flood of logins queues for CPU
 * instead of taking every database connection and the event loop from webhooks and settlements.
 */
import pLimit from 'p-limit';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../config';
import type { Knex } from '../db/knex';
import { COMMON_REASONS, reasonError, type DomainError } from '../errors';

/** Doors whose failures are counted: A1 token, C1 login and Area C action headers, Area B API key, hosted pages. */
export type AuthDoor = 'partner_token' | 'merchant_login' | 'api_key' | 'preorder_card' | 'activation';

export const RATE_LIMIT_TABLE = 'rate_limits';

export interface AbuseLimits {
  /**
   * Refuses when `credential` or `address` has used up its failures at `door`.
   * @throws DomainError RATE_LIMITED (with retryAfterSeconds)
   */
  checkAttempt(door: AuthDoor, credential: string, address: string): Promise<void>;
  /** Counts one failed authentication of `credential` from `address`. */
  recordFailure(door: AuthDoor, credential: string, address: string): Promise<void>;
  /** A successful authentication: `credential`'s failures start again from zero. */
  recordSuccess(door: AuthDoor, credential: string): Promise<void>;
  /**
   * Counts one request of a verified caller (e.g. `merchant:M…`, `partner:P…`).
   * @throws DomainError RATE_LIMITED (with retryAfterSeconds)
   */
  consumeRequest(caller: string): Promise<void>;
  /** Runs a password hash or check in one of the bounded hashing slots. */
  hashing<T>(work: () => Promise<T>): Promise<T>;
}

/** RATE_LIMITED, to be retried after `milliseconds`. */
export function rateLimited(milliseconds: number): DomainError {
  const error = reasonError(COMMON_REASONS, 'RATE_LIMITED', 'too many requests');
  error.retryAfterSeconds = Math.max(1, Math.ceil(milliseconds / 1000));
  return error;
}

/** The limits of `config`, counted in `database` (one instance per process, created at the composition root). */
export function createAbuseLimits(database: Knex, config: Config): AbuseLimits {
  const common = { storeClient: database, storeType: 'knex', tableName: RATE_LIMIT_TABLE, tableCreated: true };
  const window = config.AUTH_FAILURE_WINDOW_SECONDS;
  const byCredential = new RateLimiterPostgres({ ...common, keyPrefix: 'fail_cred', points: config.AUTH_FAILURES_PER_CREDENTIAL, duration: window, clearExpiredByTimeout: false });
  const byAddress = new RateLimiterPostgres({ ...common, keyPrefix: 'fail_addr', points: config.AUTH_FAILURES_PER_ADDRESS, duration: window, clearExpiredByTimeout: false });
  const perCaller = config.REQUESTS_PER_CALLER_PER_MINUTE
    ? new RateLimiterPostgres({ ...common, keyPrefix: 'req', points: config.REQUESTS_PER_CALLER_PER_MINUTE, duration: 60, clearExpiredByTimeout: false })
    : undefined;
  const slots = pLimit(config.PASSWORD_HASHING_CONCURRENCY);
  const credentialKey = (door: AuthDoor, credential: string) => `${door}:${credential}`.slice(0, 200);

  /** Milliseconds until `limiter` lets `key` try again, or 0 when it may now. */
  async function lockedFor(limiter: RateLimiterPostgres, key: string): Promise<number> {
    const state = await limiter.get(key);
    return state && state.consumedPoints >= limiter.points ? state.msBeforeNext : 0;
  }

  return {
    async checkAttempt(door, credential, address) {
      const [credentialMs, addressMs] = await Promise.all([lockedFor(byCredential, credentialKey(door, credential)), lockedFor(byAddress, credentialKey(door, address))]);
      const wait = Math.max(credentialMs, addressMs);
      if (wait > 0) throw rateLimited(wait);
    },
    async recordFailure(door, credential, address) {
      // Consuming past the limit rejects with a RateLimiterRes: the failure is counted either way.
      const count = (limiter: RateLimiterPostgres, key: string) =>
        limiter.consume(key).catch((outcome: unknown) => {
          if (!(outcome instanceof RateLimiterRes)) throw outcome;
        });
      await Promise.all([count(byCredential, credentialKey(door, credential)), count(byAddress, credentialKey(door, address))]);
    },
    async recordSuccess(door, credential) {
      await byCredential.delete(credentialKey(door, credential));
    },
    async consumeRequest(caller) {
      if (!perCaller) return;
      try {
        await perCaller.consume(caller);
      } catch (outcome) {
        if (outcome instanceof RateLimiterRes) throw rateLimited(outcome.msBeforeNext);
        throw outcome;
      }
    },
    hashing: (work) => slots(work),
  };
}
