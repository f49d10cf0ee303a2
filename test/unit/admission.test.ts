/**
 * Admission control (src/admission.ts): bounded in-flight work, bounded queue, bounded wait; refusals run nothing;
 * saturation is reported; one address holds its share of requests in flight.
 */
import { AdmissionRefusedError, createAddressLimit, createAdmission } from '../../src/admission';

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('admission control', () => {
  it('runs at most max_in_flight at once, queues max_queued, refuses the rest at once', async () => {
    const admission = createAdmission({ max_in_flight: 2, max_queued: 1, queue_timeout_ms: 60_000 });
    const release = gate();
    let running = 0;
    let most = 0;
    const work = async () => {
      running += 1;
      most = Math.max(most, running);
      await release.opened;
      running -= 1;
      return 'done';
    };
    const admitted = [admission.run(work), admission.run(work), admission.run(work)];
    await new Promise((resolve) => setImmediate(resolve));
    expect({ inFlight: admission.inFlight, queued: admission.queued, saturated: admission.saturated }).toEqual({ inFlight: 2, queued: 1, saturated: true });
    let ranRefused = false;
    await expect(admission.run(async () => (ranRefused = true))).rejects.toEqual(new AdmissionRefusedError('queue_full'));
    expect(ranRefused).toBe(false);
    release.open();
    await expect(Promise.all(admitted)).resolves.toEqual(['done', 'done', 'done']);
    expect(most).toBe(2);
    await expect(admission.run(async () => 'again')).resolves.toBe('again');
    expect(admission.saturated).toBe(false);
  });

  it('refuses a queued request that waited longer than queue_timeout_ms, without running it', async () => {
    const admission = createAdmission({ max_in_flight: 1, max_queued: 10, queue_timeout_ms: 20 });
    const release = gate();
    const first = admission.run(() => release.opened);
    let ran = false;
    const late = admission.run(async () => (ran = true));
    await new Promise((resolve) => setTimeout(resolve, 60));
    release.open();
    await first;
    await expect(late).rejects.toEqual(new AdmissionRefusedError('queue_timeout'));
    expect(ran).toBe(false);
  });

  it('max_in_flight 0 turns admission control off', async () => {
    const admission = createAdmission({ max_in_flight: 0, max_queued: 0, queue_timeout_ms: 1 });
    const results = await Promise.all(Array.from({ length: 100 }, (_, index) => admission.run(async () => index)));
    expect(results).toHaveLength(100);
  });

  it('caps the requests one address has in flight, and frees its share as they end', () => {
    const limit = createAddressLimit(2);
    expect([limit.enter('198.51.100.1'), limit.enter('198.51.100.1'), limit.enter('198.51.100.1')]).toEqual([true, true, false]);
    expect(limit.enter('198.51.100.2')).toBe(true);
    limit.leave('198.51.100.1');
    expect([limit.inFlight('198.51.100.1'), limit.enter('198.51.100.1')]).toEqual([1, true]);
    limit.leave('198.51.100.1');
    limit.leave('198.51.100.1');
    expect(limit.inFlight('198.51.100.1')).toBe(0);
    const off = createAddressLimit(0);
    expect(Array.from({ length: 100 }, () => off.enter('198.51.100.1')).every(Boolean)).toBe(true);
  });
});
