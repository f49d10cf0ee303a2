/** Stops what global-setup started (Temporal dev server, embedded PostgreSQL). */
export default async function globalTeardown(): Promise<void> {
  const stops = (globalThis as { __paymentsTestStops?: Array<() => Promise<void>> }).__paymentsTestStops ?? [];
  for (const stop of stops.reverse()) await stop();
}
