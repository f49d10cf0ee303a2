/**
 * Admission control (docs/operations.md "Admission control"): at most `max_in_flight` requests run at once, at
 * most `max_queued` wait for a slot, and none waits longer than `queue_timeout_ms`; and a cap on the requests of one
 * client address in flight (createAddressLimit). A request past those bounds is
 * refused at once (the façade answers 503 in the area's envelope, an RPC UNAVAILABLE), so under overload the
 * latency of admitted requests stays bounded instead of growing with the queue. The queue is p-limit's.
 */
import pLimit from 'p-limit';

export interface AdmissionLimits {
  /** Requests running at once; 0 = no admission control. */
  max_in_flight: number;
  /** Requests waiting for a slot beyond which new ones are refused. */
  max_queued: number;
  /** Longest wait for a slot, milliseconds; a request that waited longer is refused when its turn comes. */
  queue_timeout_ms: number;
}

/** Thrown by `Admission.run` for a request it refused; nothing of the request ran. */
export class AdmissionRefusedError extends Error {
  constructor(readonly why: 'queue_full' | 'queue_timeout') {
    super(`request refused by admission control (${why})`);
    this.name = 'AdmissionRefusedError';
  }
}

export interface Admission {
  /**
   * Runs `work` when a slot is free.
   * @throws AdmissionRefusedError when the queue is full, or the request waited longer than queue_timeout_ms
   */
  run<T>(work: () => Promise<T>): Promise<T>;
  readonly inFlight: number;
  readonly queued: number;
  /** Every slot taken (never with admission control off): readiness reports it, so a load balancer routes elsewhere. */
  readonly saturated: boolean;
}

export function createAdmission(limits: AdmissionLimits): Admission {
  if (limits.max_in_flight <= 0) {
    return { run: (work) => work(), inFlight: 0, queued: 0, saturated: false };
  }
  const limit = pLimit(limits.max_in_flight);
  return {
    async run(work) {
      if (limit.pendingCount >= limits.max_queued && limit.activeCount >= limits.max_in_flight) {
        throw new AdmissionRefusedError('queue_full');
      }
      const queued_at = performance.now();
      return limit(async () => {
        if (performance.now() - queued_at > limits.queue_timeout_ms) throw new AdmissionRefusedError('queue_timeout');
        return work();
      });
    },
    get inFlight() {
      return limit.activeCount;
    },
    get queued() {
      return limit.pendingCount;
    },
    get saturated() {
      return limit.activeCount >= limits.max_in_flight;
    },
  };
}

/**
 * At most `max` requests in flight per client address (its group: src/abuse addressGroup), counted from the moment
 * the request's headers arrived (its body still on its way) until its answer is sent or its connection closes: one
 * address cannot hold every socket, body buffer and admission slot of a process. 0 = no cap.
 */
export interface AddressLimit {
  /** Counts one request of `address`; false (and nothing counted) when the address already has `max` in flight. */
  enter(address: string): boolean;
  /** Ends a request `enter` counted. */
  leave(address: string): void;
  /** Requests in flight of `address`. */
  inFlight(address: string): number;
}

export function createAddressLimit(max: number): AddressLimit {
  const counts = new Map<string, number>();
  return {
    enter(address) {
      if (max <= 0) return true;
      const count = counts.get(address) ?? 0;
      if (count >= max) return false;
      counts.set(address, count + 1);
      return true;
    },
    leave(address) {
      if (max <= 0) return;
      const count = (counts.get(address) ?? 0) - 1;
      if (count > 0) counts.set(address, count);
      else counts.delete(address);
    },
    inFlight: (address) => counts.get(address) ?? 0,
  };
}
