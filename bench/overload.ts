/**
 * Benchmark `overload`: what admission control buys under overload. BENCH_OVERLOAD_CONCURRENCY (default 512) clients
 * in a closed loop call Area B `GET /api/v1/balance` (API key, one RPC, one database read) on a façade + api
 * process of its own (`payments serve --roles api,facade`, so the client does not share its event loop), first with admission control off (`FACADE_MAX_IN_FLIGHT=0`), then on (in-flight 32, queue 64, 5 s),
 * BENCH_OPERATIONS (default 5000) requests each, in the same run; a client whose request is refused waits its
 * Retry-After. Reported: answers per second, the refused share (503 + Retry-After) and p50/p99 of the answered
 * requests. Goal: p99 of answered requests without admission
 * control ÷ with it ≥ 2 (the latency of admitted work is bounded by the queue, not by the backlog).
 * Run: `npm run bench -- overload`.
 */
import { request } from 'undici';
import { createLogger } from '../src/logger';
import { createMerchant } from '../src/onboarding';
import { runRoles } from '../src/runtime';
import type { BenchResult } from './run';
import { percentile, round, runWhenMain, startBenchEnvironment, startServeProcess } from './support/harness';

interface PhaseResult {
  answered_per_second: number;
  refused_share: number;
  p50_ms: number;
  p99_ms: number;
  failures: number;
}

export async function run(): Promise<BenchResult> {
  const operations = Number(process.env.BENCH_OPERATIONS ?? 5000);
  const concurrency = Number(process.env.BENCH_OVERLOAD_CONCURRENCY ?? 512);
  const environment = await startBenchEnvironment('overload');
  try {
    // Per-merchant request limits off: the load is one merchant on purpose.
    const config = environment.config({ REQUESTS_PER_CALLER_PER_MINUTE: '0' });
    const local = await runRoles(config, ['api'], createLogger('silent'));
    environment.defer(() => local.stop());
    const { credentials } = await createMerchant(local.deps!, { name: 'Overload merchant', callback_url: 'https://merchant.example/hook' });
    const phase = async (admission: Record<string, string>): Promise<PhaseResult> => {
      // Every client is 127.0.0.1: the per-address cap off, so that the figures are admission control's alone.
      const served = await startServeProcess(config, { REQUESTS_PER_CALLER_PER_MINUTE: '0', FACADE_MAX_IN_FLIGHT_PER_ADDRESS: '0', ...admission });
      try {
        const url = `${served.facadeUrl}/api/v1/balance`;
        const call = async () => {
          const response = await request(url, { headers: { 'x-api-key': credentials.api_key } });
          await response.body.dump();
          return response.statusCode;
        };
        // Warm-up: every client opens its keep-alive connection first, so connection set-up (a burst of 512 SYNs
        // overflows the listen backlog and waits for SYN retransmits, 1 s and 3 s) is not counted as latency.
        for (let index = 0; index < 200; index += 1) await call();
        await Promise.all(Array.from({ length: concurrency }, () => call().catch(() => 0)));
        const answered: number[] = [];
        let refused = 0;
        let failures = 0;
        let next = 0;
        const started = performance.now();
        await Promise.all(
          Array.from({ length: concurrency }, async () => {
            while (next < operations) {
              next += 1;
              const t0 = performance.now();
              const status = await call().catch(() => 0);
              if (status === 200) answered.push(performance.now() - t0);
              else if (status === 503) {
                refused += 1;
                // A well-behaved client waits Retry-After (1 s) before its next request.
                await new Promise((resolve) => setTimeout(resolve, 1000));
              } else failures += 1;
            }
          }),
        );
        const seconds = (performance.now() - started) / 1000;
        answered.sort((a, b) => a - b);
        return {
          answered_per_second: answered.length / seconds,
          refused_share: refused / operations,
          p50_ms: percentile(answered, 50),
          p99_ms: percentile(answered, 99),
          failures,
        };
      } finally {
        await served.stop();
      }
    };
    const off = await phase({ FACADE_MAX_IN_FLIGHT: '0' });
    const on = await phase({ FACADE_MAX_IN_FLIGHT: '32', FACADE_MAX_QUEUED: '64', FACADE_QUEUE_TIMEOUT_SECONDS: '5' });
    const row = (name: string, result: PhaseResult) => ({
      phase: name,
      concurrency,
      operations,
      answered_per_second: round(result.answered_per_second, 1),
      refused_share: round(result.refused_share, 3),
      p50_ms: round(result.p50_ms),
      p99_ms: round(result.p99_ms),
      failures: result.failures,
    });
    return {
      name: 'overload',
      rows: [row('admission control off', off), row('admission control on (in-flight 32, queue 64)', on)],
      ratios: [{ label: 'p99 of answered requests, admission off ÷ on', value: off.p99_ms / on.p99_ms, goal: 2 }],
      notes: [
        `${concurrency} clients in a closed loop on one façade + api process (2 shared cores with the client and PostgreSQL); a refused request is answered 503 at once and its client waits Retry-After (1 s) before the next`,
        `answers per second with admission control ÷ without: ${round(on.answered_per_second / off.answered_per_second, 2)}× (the work done stays about the same; who waits changes)`,
      ],
    };
  } finally {
    await environment.close();
  }
}

runWhenMain(module, run);
