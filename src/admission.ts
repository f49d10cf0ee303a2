/**
 * Admission control (docs/operations.md "Admission control"): at most `max_in_flight` requests run at once, at
 * most `max_queued` wait for a slot, and none waits longer than `queue_timeout_ms`. A request past those bounds is
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
}

export function createAdmission(limits: AdmissionLimits): Admission {
  if (limits.max_in_flight <= 0) {
    return { run: (work) => work(), inFlight: 0, queued: 0 };
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
  };
}
