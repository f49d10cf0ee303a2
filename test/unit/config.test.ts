import { ConfigError, loadConfig } from '../../src/config';

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
});
