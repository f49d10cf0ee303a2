/** The benchmark harness's accounting (bench/support/harness.ts): CPU read from /proc, completed-operation rates. */
import { completedPerSecond, cpuAccount, cpuColumns, cpuSecondsOf } from '../../bench/support/harness';

/**
 * Spins until this process has used `milliseconds` of CPU (user + system, as the kernel counts it), however long that
 * takes on a loaded machine: a busy loop timed by the wall clock gets only its share of shared cores.
 */
function busyFor(milliseconds: number): void {
  const cpuMs = () => {
    const used = process.cpuUsage();
    return (used.user + used.system) / 1000;
  };
  const until = cpuMs() + milliseconds;
  while (cpuMs() < until) Math.sqrt(Math.random());
}

describe('cpuSecondsOf', () => {
  it('reads the CPU time of a live process, which grows with its work', () => {
    const before = cpuSecondsOf(process.pid);
    expect(before).toBeGreaterThan(0);
    busyFor(200);
    // Clock ticks are 10 ms: 200 ms of CPU shows as at least 0.1 s in /proc.
    expect(cpuSecondsOf(process.pid)! - before!).toBeGreaterThanOrEqual(0.1);
  });

  it('is undefined for a process that does not exist', () => {
    expect(cpuSecondsOf(2 ** 30)).toBeUndefined();
  });
});

describe('cpuAccount', () => {
  it('gives each phase the CPU its slices used, per operation, by group', () => {
    const account = cpuAccount(() => ({ self: [process.pid], gone: [2 ** 30] }));
    account.begin();
    busyFor(200);
    account.end(0, 10);
    account.begin();
    account.end(1, 10);
    const busy = account.perOperationMs(0);
    // 200 ms of CPU over 10 operations: about 20 ms each (ticks of 10 ms, so at least 10).
    expect(busy.self).toBeGreaterThanOrEqual(10);
    expect(busy.gone).toBe(0);
    expect(account.perOperationMs(1).self).toBeLessThan(busy.self!);
    expect(account.perOperationMs(2)).toEqual({});
    expect(cpuColumns(account, 0)).toEqual({ cpu_ms_all: busy.self, cpu_ms_self: busy.self, cpu_ms_gone: 0 });
  });
});

describe('completedPerSecond', () => {
  const measurement = { per_second: 60, p50_ms: 10, p99_ms: 20 };

  it('counts only the operations that completed', () => {
    expect(completedPerSecond(measurement, 600, 0)).toBe(60);
    expect(completedPerSecond(measurement, 600, 382)).toBe(21.8);
    expect(completedPerSecond(measurement, 600, 600)).toBe(0);
  });

  it('refuses a failure count outside the operations', () => {
    expect(() => completedPerSecond(measurement, 600, 601)).toThrow(RangeError);
    expect(() => completedPerSecond(measurement, 600, -1)).toThrow(RangeError);
  });
});
