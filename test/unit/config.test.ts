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
    expect(config.SANDBOX_OTP).toBe('123456');
    expect(config.DATABASE_URL).toBeUndefined();
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
    expect(loadConfig({ TEMPORAL_ADDRESS: 'temporal.internal:7233', TEMPORAL_ALLOW_INSECURE: 'true' }).TEMPORAL_ALLOW_INSECURE).toBe(true);
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
