/**
 * Abuse limits (docs/security.md "Abuse limits"): lockouts after failed authentication and request-rate limits
 * per authenticated caller, counted in PostgreSQL by rate-limiter-flexible (table `rate_limits`), so every process
 * of the platform shares them.
 *
 *   failures per credential   AUTH_FAILURES_PER_CREDENTIAL (10) per AUTH_FAILURE_WINDOW_SECONDS (60) from one
 *     and client address      client address: one more attempt with that credential from that address, right or
 *                             wrong, is refused until the window ends. Another address is not locked by it, so
 *                             failures naming a partner or merchant cannot lock its owner out from where it works
 *   failures per credential   AUTH_FAILURES_PER_CREDENTIAL_TOTAL (1000) per window from every address together: the
 *     across addresses        throttle against guessing one credential from many addresses; much higher than the
 *                             pair's, so only an attacker with a hundred addresses or more reaches it
 *   failures per address      AUTH_FAILURES_PER_ADDRESS (50) per window and door, whatever the credentials tried
 *   refused calls audited     AUDIT_REFUSALS_PER_CREDENTIAL (30) per AUDIT_REFUSAL_WINDOW_SECONDS (60) per RPC
 *     per credential          credential: a verified caller's refused privileged attempts past it are refused without
 *                             an audit row (src/rpc/audit.ts counts the dropped ones), so a flood cannot fill the table
 *   requests per caller       REQUESTS_PER_CALLER_PER_MINUTE (6000) for a verified partner or merchant; 0 = off.
 *                             A process takes a caller's points in leases of 1 % of the limit (one counter write per
 *                             lease instead of per request, the counter being one hot row per caller) and spends them
 *                             until its window ends: the limit is never exceeded, and a caller near it may be refused
 *                             up to one lease early per process
 *
 * An attempt is counted as a failure before its credential is checked (`beginAttempt`, one atomic increment per
 * counter), so concurrent attempts cannot all pass a check that none of them has counted yet: at most the limit's
 * number of attempts are ever checked per window, however many arrive at once. A success gives its address's point
 * back and clears the failures of its credential from its address; an attempt that decided nothing (an internal error, a page that is
 * neither a success nor a failure) gives both points back. A refused attempt is not counted. A locked or limited
 * call is refused with RATE_LIMITED and the seconds until it may be tried again (each area answers 429 with
 * `Retry-After`), the same for a credential that exists and one that does not.
 *
 * Password hashing runs under a bounded concurrency (`hashing`), so a flood of logins queues for CPU instead of
 * taking every database connection and the event loop from webhooks and settlements.
 */
import { LRUCache } from 'lru-cache';
import ipaddr from 'ipaddr.js';
import pLimit from 'p-limit';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../config';
import type { Knex } from '../db/knex';
import { COMMON_REASONS, reasonError, type DomainError } from '../errors';

/** Doors whose failures are counted: A1 token, C1 login, Area B API key, hosted card form, activation pages. */
export type AuthDoor = 'partner_token' | 'merchant_login' | 'api_key' | 'preorder_card' | 'activation';

export const RATE_LIMIT_TABLE = 'rate_limits';

/**
 * One authentication attempt, already counted as a failure of its credential from its address, of its credential
 * across addresses, and of its address. Settle it once; an attempt never settled stays a failure.
 */
export interface AuthAttempt {
  /** The credential was wrong: the failure stays counted. */
  failed(): Promise<void>;
  /**
   * The credential was right: its failures from this address start again from zero, and the points of the
   * credential across addresses and of the address are given back.
   */
  succeeded(): Promise<void>;
  /** Neither (an internal error, a page that checked nothing): every point is given back. */
  withdrawn(): Promise<void>;
}

export interface AbuseLimits {
  /**
   * Counts one attempt of `credential` from `address` at `door` before it is checked; refused (and not counted)
   * when the credential from this address, the credential across addresses or the address has used up its
   * failures of the window.
   * @throws DomainError RATE_LIMITED (with retryAfterSeconds)
   */
  beginAttempt(door: AuthDoor, credential: string, address: string): Promise<AuthAttempt>;
  /** Counts one failure found after the attempt was answered (a declined card), never refusing. */
  recordFailure(door: AuthDoor, credential: string, address: string): Promise<void>;
  /**
   * Counts one request of a verified caller (e.g. `merchant:M…`, `partner:P…`).
   * @throws DomainError RATE_LIMITED (with retryAfterSeconds)
   */
  consumeRequest(caller: string): Promise<void>;
  /**
   * Takes one point of `credential`'s refused RPC calls that get an audit row (AUDIT_REFUSALS_PER_CREDENTIAL per
   * AUDIT_REFUSAL_WINDOW_SECONDS). @returns false when the credential has used them up in this window
   */
  admitRefusalRecord(credential: string): Promise<boolean>;
  /**
   * Told of each refusal, when set (the composition root counts them in payments_lockouts_total): `door` and which
   * limit was used up (`pair`, `credential`, `address`), or door `request` and limit `caller` for a caller's rate.
   */
  onRefused?: (door: AuthDoor | 'request', limit: 'pair' | 'credential' | 'address' | 'caller') => void;
  /**
   * Runs a password hash or check in one of the bounded hashing slots (PASSWORD_HASHING_CONCURRENCY per process).
   * Work whose `signal` has aborted by the time its slot comes (the caller's deadline passed, or it went away) is
   * dropped, so a backlog of abandoned logins does not hold live ones behind it.
   * @throws the signal's reason when dropped
   */
  hashing<T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T>;
}

/**
 * The form of a client address its failures are counted under: an IPv4 address as is (an IPv4-mapped IPv6 address
 * as its IPv4 address), an IPv6 address as its network of `ipv6Prefix` bits (`2001:db8:1:2::/64`), anything else
 * (no address known) as given.
 */
export function addressGroup(address: string, ipv6Prefix: number): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  return `${ipaddr.IPv6.networkAddressFromCIDR(`${parsed.toNormalizedString()}/${ipv6Prefix}`).toString()}/${ipv6Prefix}`;
}

/** RATE_LIMITED, to be retried after `milliseconds`. */
export function rateLimited(milliseconds: number): DomainError {
  const error = reasonError(COMMON_REASONS, 'RATE_LIMITED', 'too many requests');
  error.retryAfterSeconds = Math.max(1, Math.ceil(milliseconds / 1000));
  return error;
}

/**
 * A point is given back only while its window has at least this long to run: given back into the next window, it
 * would let that window count one failure less.
 */
const GIVE_BACK_MARGIN_MS = 1000;

/** A request-rate lease is this share of the per-minute limit (at least one point). */
const REQUEST_LEASE_SHARE = 0.01;
/** Callers whose leases one process remembers (least recently used forgotten first). */
const REQUEST_LEASES_MAX = 10_000;
/** Leases one request waits for before it takes a single point itself (a burst larger than a lease). */
const REQUEST_LEASE_TRIES = 3;

/** Points of a caller's request rate this process has taken from the shared counter and not spent yet. */
interface RequestLease {
  remaining: number;
  /** When the counter's window ends (epoch ms): the points are not spent after it. */
  until_ms: number;
}

/** The limits of `config`, counted in `database` (one instance per process, created at the composition root). */
export function createAbuseLimits(database: Knex, config: Config): AbuseLimits {
  const common = { storeClient: database, storeType: 'knex', tableName: RATE_LIMIT_TABLE, tableCreated: true };
  const window = config.AUTH_FAILURE_WINDOW_SECONDS;
  // The library's clean-up (every 5 minutes, of counters whose window ended over an hour ago) runs on one limiter:
  // it deletes from the whole table, so every guessed key, address and caller leaves no row behind for long.
  const byPair = new RateLimiterPostgres({ ...common, keyPrefix: 'fail_pair', points: config.AUTH_FAILURES_PER_CREDENTIAL, duration: window, clearExpiredByTimeout: true });
  const byCredential = new RateLimiterPostgres({ ...common, keyPrefix: 'fail_cred', points: config.AUTH_FAILURES_PER_CREDENTIAL_TOTAL, duration: window, clearExpiredByTimeout: false });
  const byAddress = new RateLimiterPostgres({ ...common, keyPrefix: 'fail_addr', points: config.AUTH_FAILURES_PER_ADDRESS, duration: window, clearExpiredByTimeout: false });
  const perCaller = config.REQUESTS_PER_CALLER_PER_MINUTE
    ? new RateLimiterPostgres({ ...common, keyPrefix: 'req', points: config.REQUESTS_PER_CALLER_PER_MINUTE, duration: 60, clearExpiredByTimeout: false })
    : undefined;
  const refusalsRecorded = new RateLimiterPostgres({
    ...common,
    keyPrefix: 'audit_refused',
    points: config.AUDIT_REFUSALS_PER_CREDENTIAL,
    duration: config.AUDIT_REFUSAL_WINDOW_SECONDS,
    clearExpiredByTimeout: false,
  });
  const slots = pLimit(config.PASSWORD_HASHING_CONCURRENCY);
  const leaseSize = Math.max(1, Math.floor(config.REQUESTS_PER_CALLER_PER_MINUTE * REQUEST_LEASE_SHARE));
  const leases = new LRUCache<string, RequestLease>({ max: REQUEST_LEASES_MAX });
  // One lease taken at a time per caller: concurrent requests wait for it instead of each taking one.
  const taking = new Map<string, Promise<void>>();

  /** Takes `points` of `caller`'s request rate from the shared counter. @throws RATE_LIMITED past the limit */
  async function takeRequestPoints(limiter: RateLimiterPostgres, caller: string, points: number): Promise<RateLimiterRes> {
    try {
      return await limiter.consume(caller, points);
    } catch (outcome) {
      if (outcome instanceof RateLimiterRes) {
        limits.onRefused?.('request', 'caller');
        throw rateLimited(outcome.msBeforeNext);
      }
      throw outcome;
    }
  }

  /** Spends one point of this process's lease for `caller`; false when it has none left in the current window. */
  function spend(caller: string): boolean {
    const lease = leases.get(caller);
    if (!lease || lease.remaining === 0 || Date.now() >= lease.until_ms) return false;
    lease.remaining -= 1;
    return true;
  }
  const doorKey = (door: AuthDoor, credentialOrAddress: string) => `${door}:${credentialOrAddress}`.slice(0, 200);
  const addressKey = (door: AuthDoor, address: string) => doorKey(door, addressGroup(address, config.AUTH_FAILURE_IPV6_PREFIX));
  // The address group first: a credential long enough to be cut short still keeps its pair apart from other addresses.
  const pairKey = (door: AuthDoor, credential: string, address: string) => doorKey(door, `${addressGroup(address, config.AUTH_FAILURE_IPV6_PREFIX)}|${credential}`);

  /** One point of `key` taken, with when its window ends; `over` when the take went past the limit. */
  interface Taken {
    limiter: RateLimiterPostgres;
    key: string;
    over: boolean;
    windowEndsAt: number;
  }

  /** Takes one point of `key`; consuming past the limit rejects with a RateLimiterRes, and the point counts anyway. */
  async function take(limiter: RateLimiterPostgres, key: string): Promise<Taken> {
    let state: RateLimiterRes;
    let over = false;
    try {
      state = await limiter.consume(key);
    } catch (outcome) {
      if (!(outcome instanceof RateLimiterRes)) throw outcome;
      state = outcome;
      over = true;
    }
    return { limiter, key, over, windowEndsAt: Date.now() + state.msBeforeNext };
  }

  /** Gives `taken`'s point back, unless its window is (nearly) over: then the point expires with it. */
  async function giveBack(taken: Taken): Promise<void> {
    if (taken.windowEndsAt - Date.now() > GIVE_BACK_MARGIN_MS) await taken.limiter.reward(taken.key, 1);
  }

  const limits: AbuseLimits = {
    async beginAttempt(door, credential, address) {
      const credentialPairKey = pairKey(door, credential, address);
      const taken = await Promise.allSettled([
        take(byPair, credentialPairKey),
        take(byCredential, doorKey(door, credential)),
        take(byAddress, addressKey(door, address)),
      ]);
      const points = taken.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
      const failed = taken.find((outcome) => outcome.status === 'rejected');
      if (failed || points.some((point) => point.over)) {
        await Promise.all(points.map(giveBack));
        if (failed) throw failed.reason;
        const over = taken.findIndex((outcome) => outcome.status === 'fulfilled' && outcome.value.over);
        limits.onRefused?.(door, (['pair', 'credential', 'address'] as const)[over]!);
        throw rateLimited(Math.max(...points.filter((point) => point.over).map((point) => point.windowEndsAt - Date.now())));
      }
      const [pairPoint, credentialPoint, addressPoint] = points as [Taken, Taken, Taken];
      let settled = false;
      const settle = async (work: () => Promise<unknown>) => {
        if (settled) return;
        settled = true;
        await work();
      };
      return {
        failed: () => settle(async () => undefined),
        // The owner's success clears its own address's failures only: the count across addresses keeps what others
        // tried, so a login now and then does not reset a spread-out guess.
        succeeded: () => settle(() => Promise.all([byPair.delete(credentialPairKey), giveBack(credentialPoint), giveBack(addressPoint)])),
        withdrawn: () => settle(() => Promise.all([giveBack(pairPoint), giveBack(credentialPoint), giveBack(addressPoint)])),
      };
    },
    async recordFailure(door, credential, address) {
      await Promise.all([take(byPair, pairKey(door, credential, address)), take(byCredential, doorKey(door, credential)), take(byAddress, addressKey(door, address))]);
    },
    async consumeRequest(caller) {
      if (!perCaller) return;
      for (let attempt = 0; attempt < REQUEST_LEASE_TRIES; attempt++) {
        if (spend(caller)) return;
        let pending = taking.get(caller);
        if (!pending) {
          pending = takeRequestPoints(perCaller, caller, leaseSize)
            .then((taken) => {
              leases.set(caller, { remaining: leaseSize, until_ms: Date.now() + taken.msBeforeNext });
            })
            .finally(() => taking.delete(caller));
          taking.set(caller, pending);
        }
        await pending;
      }
      if (spend(caller)) return;
      await takeRequestPoints(perCaller, caller, 1);
    },
    async admitRefusalRecord(credential) {
      const taken = await take(refusalsRecorded, credential.slice(0, 200));
      return !taken.over;
    },
    hashing: (work, signal) =>
      slots(() => {
        signal?.throwIfAborted();
        return work();
      }),
  };
  return limits;
}
