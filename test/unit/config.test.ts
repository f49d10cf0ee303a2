import { ConfigError, loadConfig } from '../../src/config';
import { temporalConnectionOptions } from '../../src/temporal/connection-options';

describe('config (platform decisions §1)', () => {
  it('applies the documented defaults when nothing is set', () => {
    const config = loadConfig({});
    expect(config.HTTP_PORT).toBe(3000);
    expect(config.RPC_PORT).toBe(8080);
    expect(config.SANDBOX_PORT).toBe(3100);
    expect(config.TEMPORAL_TASK_QUEUE).toBe('payments');
    expect(config.PAYIN_TTL_SECONDS).toBe(300);
    expect(config.PRE_TRANSFER_TTL_SECONDS).toBe(600);
    expect(config.ACCESS_TOKEN_TTL_SECONDS).toBe(7200);
    expect(config.MERCHANT_SESSION_TTL_SECONDS).toBe(3600);
    expect(config.WEBHOOK_RETRY_WINDOW_SECONDS).toBe(259200);
    expect(config.PUBLIC_BASE_URL).toBe('http://127.0.0.1:3000');
    expect(config.DATABASE_URL).toBeUndefined();
  });

  it('runs in live mode unless test mode is chosen, and only test mode has a sandbox OTP', () => {
    expect(loadConfig({}).PAYMENTS_MODE).toBe('live');
    expect(loadConfig({}).SANDBOX_OTP).toBeUndefined();
    expect(loadConfig({ PAYMENTS_MODE: 'test' }).SANDBOX_OTP).toBe('123456');
    expect(loadConfig({ PAYMENTS_MODE: 'test', SANDBOX_OTP: '730519' }).SANDBOX_OTP).toBe('730519');
    // Defaults stand in for unset (or empty) variables only: `npm start` chooses test mode, the environment overrides it.
    expect(loadConfig({}, { PAYMENTS_MODE: 'test' }).PAYMENTS_MODE).toBe('test');
    expect(loadConfig({ PAYMENTS_MODE: '' }, { PAYMENTS_MODE: 'test' }).PAYMENTS_MODE).toBe('test');
    expect(loadConfig({ PAYMENTS_MODE: 'live' }, { PAYMENTS_MODE: 'test' }).PAYMENTS_MODE).toBe('live');
  });

  it.each([
    ['SANDBOX_OTP', { SANDBOX_OTP: '123456' }, /is a test-mode setting \(the sandbox acquirer\): live mode has no sandbox/],
    ['UPSTREAM_PAYIN_URL', { UPSTREAM_PAYIN_URL: 'http://127.0.0.1:3100/payins' }, /must be https in live mode/],
    ['UPSTREAM_API_KEY', { UPSTREAM_API_KEY: 'sandbox-upstream-key' }, /is a published sandbox default/],
    ['UPSTREAM_WEBHOOK_SECRET', { UPSTREAM_WEBHOOK_SECRET: 'sandbox-upstream-webhook-secret' }, /is a published sandbox default/],
    ['UPSTREAM_WEBHOOK_SECRET', { UPSTREAM_WEBHOOK_SECRET: 'short-secret' }, /is shorter than 16 characters/],
    ['TEMPORAL_ALLOW_INSECURE', { TEMPORAL_ALLOW_INSECURE: 'true' }, /plaintext Temporal over a network is a development choice/],
  ])('live mode refuses %s (%j) with one line naming it; test mode takes it', (variable, settings, detail) => {
    let caught: unknown;
    try {
      loadConfig(settings);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).variable).toBe(variable);
    expect((caught as ConfigError).message).toMatch(new RegExp(`^invalid configuration: ${variable}: ${detail.source}`));
    expect((caught as ConfigError).message).not.toContain('\n');
    expect(() => loadConfig({ ...settings, PAYMENTS_MODE: 'test' })).not.toThrow();
  });

  it('takes a live upstream over https with secrets of its own', () => {
    const config = loadConfig({ UPSTREAM_PAYIN_URL: 'https://provider.example/payins', UPSTREAM_API_KEY: 'a'.repeat(32), UPSTREAM_WEBHOOK_SECRET: 'b'.repeat(16) });
    expect(config).toMatchObject({ PAYMENTS_MODE: 'live', UPSTREAM_PAYIN_URL: 'https://provider.example/payins' });
  });

  it.each([
    ['HTTP_PORT', 'eighty'],
    ['HTTP_PORT', '70000'],
    ['PAYIN_TTL_SECONDS', '0'],
    ['PAYIN_TTL_SECONDS', '1.5'],
    ['DATABASE_URL', 'mysql://x'],
    ['TEMPORAL_ADDRESS', 'no-port'],
    ['PUBLIC_BASE_URL', 'not a url'],
    ['PARTNER_PREFIX', 'partner/'],
    ['SANDBOX_OTP', '12ab'],
    ['LOG_LEVEL', 'loud'],
  ])('rejects %s=%s with one line naming the variable', (variable, value) => {
    let caught: unknown;
    try {
      loadConfig({ [variable]: value });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const error = caught as ConfigError;
    expect(error.variable).toBe(variable);
    expect(error.message.startsWith(`invalid configuration: ${variable}:`)).toBe(true);
    expect(error.message).not.toContain('\n');
  });

  it('reads numbers and trims a trailing slash from PUBLIC_BASE_URL', () => {
    const config = loadConfig({ HTTP_PORT: '3300', PUBLIC_BASE_URL: 'https://pay.example.com/', PARTNER_PREFIX: '/a' });
    expect(config.HTTP_PORT).toBe(3300);
    expect(config.PUBLIC_BASE_URL).toBe('https://pay.example.com');
    expect(config.PARTNER_PREFIX).toBe('/a');
  });

  it('treats empty strings as unset', () => {
    expect(loadConfig({ HTTP_PORT: '', DATABASE_URL: '' }).HTTP_PORT).toBe(3000);
  });

  it('binds the RPC port to loopback and caps RPC messages by default', () => {
    const config = loadConfig({});
    expect(config.RPC_HOST).toBe('127.0.0.1');
    expect(config.RPC_READ_MAX_BYTES).toBe(4_194_304);
  });

  it('refuses a non-loopback Temporal frontend without TLS unless told the network is private', () => {
    const refused = () => loadConfig({ TEMPORAL_ADDRESS: 'temporal.internal:7233' });
    expect(refused).toThrow(ConfigError);
    expect(refused).toThrow(/^invalid configuration: TEMPORAL_ADDRESS: is not loopback and TLS is off/);
    expect(loadConfig({ TEMPORAL_ADDRESS: 'localhost:7233' }).TEMPORAL_ADDRESS).toBe('localhost:7233');
    expect(loadConfig({ TEMPORAL_ADDRESS: 'temporal.internal:7233', TEMPORAL_ALLOW_INSECURE: 'true', PAYMENTS_MODE: 'test' }).TEMPORAL_ALLOW_INSECURE).toBe(true);
    expect(loadConfig({ TEMPORAL_ADDRESS: 'temporal.internal:7233', TEMPORAL_TLS: 'true' }).TEMPORAL_TLS).toBe(true);
    const cloud = loadConfig({ TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233', TEMPORAL_API_KEY: 'key-1' });
    expect(temporalConnectionOptions(cloud)).toEqual({ tls: {}, apiKey: 'key-1' });
    expect(temporalConnectionOptions(loadConfig({}))).toEqual({});
  });

  it('wants a certificate and its key together', () => {
    expect(() => loadConfig({ TEMPORAL_TLS_CERT: '/etc/tls/client.pem' })).toThrow(/TEMPORAL_TLS_KEY: is required with TEMPORAL_TLS_CERT/);
    expect(() => loadConfig({ RPC_TLS_KEY: '/etc/tls/rpc.key' })).toThrow(/RPC_TLS_CERT: is required with RPC_TLS_KEY/);
    expect(() => loadConfig({ RPC_TLS_CLIENT_CA: '/etc/tls/ca.pem' })).toThrow(/RPC_TLS_CERT: is required with RPC_TLS_CLIENT_CA/);
  });

  it('names the variable whose PEM file cannot be read', () => {
    const config = loadConfig({ TEMPORAL_TLS: 'true', TEMPORAL_TLS_CA: '/nonexistent/ca.pem' });
    expect(() => temporalConnectionOptions(config)).toThrow(/^invalid configuration: TEMPORAL_TLS_CA: cannot read \/nonexistent\/ca.pem: ENOENT$/);
  });
});
