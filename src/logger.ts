/**
 * Structured JSON logging (pino). Secrets are redacted by path; card and account numbers never reach the
 * logger because services log only their last 4 digits.
 */
import { isSpanContextValid, trace } from '@opentelemetry/api';
import pino, { type Logger } from 'pino';

/** Log paths whose values are replaced by "[redacted]" wherever they appear (one or two levels deep). */
export const REDACTED_KEYS = [
  'password',
  'api_password',
  'partner_secret_key',
  'merchant_secret_key',
  'partner-secret-key',
  'merchant-secret-key',
  'secret',
  'hmac_secret',
  'api_key',
  'x-api-key',
  'api-key',
  'authorization',
  'access_token',
  'token',
  'user_token',
  'private_key',
  'sign',
  'bank_code',
  'bank_number',
  'security_code',
  'sourceOfFunds',
  'holder_name',
  'card_number',
  'account_number',
];

const redactPaths = REDACTED_KEYS.flatMap((key) => {
  const quoted = /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? key : `["${key}"]`;
  const dot = quoted.startsWith('[') ? '' : '.';
  return [quoted, `*${dot}${quoted}`, `*.*${dot}${quoted}`];
});

/**
 * The active trace of the line being written, as `trace_id` and `span_id` (W3C hex): a line logged within a traced
 * request, workflow task or activity names the trace an operator opens in the tracing UI. Without tracing (or outside
 * any span) the API's no-op span has no valid context and the line carries neither.
 */
function traceFields(): { trace_id?: string; span_id?: string } {
  const context = trace.getActiveSpan()?.spanContext();
  return context && isSpanContextValid(context) ? { trace_id: context.traceId, span_id: context.spanId } : {};
}

/**
 * Creates the root logger. `level` is a pino level name ("silent" in tests by default); `destination` defaults to
 * stdout (tests pass a stream to inspect what is logged).
 */
export function createLogger(level: string = process.env.LOG_LEVEL ?? 'info', name = 'payments', destination?: pino.DestinationStream): Logger {
  const options = { name, level, redact: { paths: redactPaths, censor: '[redacted]' }, mixin: traceFields };
  return destination ? pino(options, destination) : pino(options);
}

export type { Logger };
