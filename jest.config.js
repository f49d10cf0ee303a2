/**
 * Jest: unit tests of pure code, workflow tests on a real Temporal dev server, integration and e2e tests against real
 * PostgreSQL and a real Temporal dev server.
 */
const transform = {
  '^.+\\.tsx?$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' } }],
  // Node loads these through require() where jest's own loader cannot (before Node 24.9, without
  // --experimental-vm-modules): jose ships ES modules only, and the OTLP exporter loads node:http with import().
  '/node_modules/(jose|@opentelemetry/otlp-exporter-base)/.+\\.js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
};
const transformIgnorePatterns = ['/node_modules/(?!(jose|@opentelemetry/otlp-exporter-base)/)'];
module.exports = {
  testTimeout: 60000,
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  projects: [
    { displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'], transform, transformIgnorePatterns, testEnvironment: 'node' },
    // Each workflow on the run's Temporal dev server with mocked activities (test/workflows/bed.ts); the timeline's
    // workflow source against the same server, with small workflows of its own (test/timeline).
    {
      displayName: 'workflows',
      testMatch: ['<rootDir>/test/workflows/**/*.test.ts', '<rootDir>/test/timeline/**/*.test.ts'],
      transform,
      transformIgnorePatterns,
      testEnvironment: 'node',
    },
    {
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts', '<rootDir>/test/e2e/**/*.test.ts', '<rootDir>/test/fuzz/**/*.test.ts', '<rootDir>/test/faults/**/*.test.ts'],
      transform,
      transformIgnorePatterns,
      testEnvironment: 'node',
    },
    // The interface as merchants and partners built against it (docs/compatibility.md): requests exactly as
    // payment-services-interface.md and the platform decisions document them, against the real platform over HTTP.
    { displayName: 'contract', testMatch: ['<rootDir>/test/contract/**/*.test.ts'], transform, transformIgnorePatterns, testEnvironment: 'node' },
    // Only against a running cluster (`npm run test:cluster` sets PAYMENTS_TEST_CLUSTER): never part of `npm test`.
    ...(process.env.PAYMENTS_TEST_CLUSTER
      ? [{ displayName: 'cluster', testMatch: ['<rootDir>/test/cluster/**/*.test.ts'], transform, transformIgnorePatterns, testEnvironment: 'node' }]
      : []),
  ],
};
