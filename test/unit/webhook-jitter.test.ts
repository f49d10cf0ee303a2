/**
 * The jitter of webhook retry waits (src/webhooks/contract.ts `withJitter`, docs/webhooks.md "Retries"): a wait
 * stays within [1 − j/2, 1 + j/2] of its backoff, covers that range, and is the backoff itself without jitter.
 */
import { retryDelaySeconds, withJitter } from '../../src/webhooks/contract';

describe('webhook retry jitter', () => {
  it('spreads each wait over ±j/2 of its backoff, and leaves it alone with j = 0', () => {
    expect(withJitter(10, 0.2, 0)).toBeCloseTo(9);
    expect(withJitter(10, 0.2, 0.5)).toBeCloseTo(10);
    expect(withJitter(10, 0.2, 0.999999)).toBeCloseTo(11);
    expect(withJitter(10, 0, 0.73)).toBe(10);
    const waits = Array.from({ length: 200 }, (_, index) => withJitter(100, 0.2, index / 200));
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(90);
    expect(Math.max(...waits)).toBeLessThan(110);
  });

  it('keeps the backoff schedule itself unchanged (the next backoff doubles the backoff, not the jittered wait)', () => {
    const retry = { initial_seconds: 5, max_interval_seconds: 3600, window_seconds: 259_200, jitter: 0.2 };
    expect(retryDelaySeconds(retry, undefined, 0)).toBe(5);
    expect(retryDelaySeconds(retry, 5, 5.4)).toBe(10);
  });
});
