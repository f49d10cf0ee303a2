/**
 * Connect clients of the platform services, as the façade and the admin CLI use them (HTTP/2 h2c, Connect
 * protocol). The façade reaches the platform only through these.
 */
import { createClient, type Interceptor, type Transport } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { ConfigError, readConfiguredFile, type Config } from '../config';
import { readCredentialsFile } from '../service-credentials/files';
import { bearerInterceptor } from './auth';
import { PLATFORM_SERVICE_NAMES, PLATFORM_SERVICES, type PlatformClients } from './services';

export type { PlatformClients } from './services';

/**
 * A transport that gives every call without its own deadline `timeoutMs`: a call that outlives it fails with
 * `Code.DeadlineExceeded` (the façade answers its area's system error, and the call is safe to retry).
 */
export function withDefaultDeadline(transport: Transport, timeoutMs: number): Transport {
  return {
    unary: (method, signal, callTimeoutMs, header, input, contextValues) =>
      transport.unary(method, signal, callTimeoutMs ?? timeoutMs, header, input, contextValues),
    stream: (method, signal, callTimeoutMs, header, input, contextValues) =>
      transport.stream(method, signal, callTimeoutMs ?? timeoutMs, header, input, contextValues),
  };
}

/** How a network client proves who it is to the RPC server (src/rpc/auth.ts). PEM texts. */
export interface RpcClientCredentials {
  /** A service credential, sent as `Authorization: Bearer …`. */
  token?: string;
  /** Client certificate and key for mTLS; `ca` verifies the server's certificate (else the system store). */
  tls?: { cert?: string; key?: string; ca?: string };
}

/**
 * @param rpc base URL of the RPC server, e.g. http://127.0.0.1:8080 (Connect over HTTP/2 h2c, one reused session;
 *            https:// with TLS), or a transport (`createInProcessTransport` when the api role runs in this process)
 * @param options.timeoutMs the deadline of every call that names none (REQUEST_TIMEOUT_SECONDS for the façade)
 * @param options.credentials what a network client presents; ignored for a transport
 * @param options.interceptors more interceptors of a network client (tracing); ignored for a transport
 */
export function createPlatformClients(
  rpc: string | Transport,
  options: { httpVersion?: '1.1' | '2'; timeoutMs?: number; credentials?: RpcClientCredentials; interceptors?: Interceptor[] } = {},
): PlatformClients {
  const { token, tls } = options.credentials ?? {};
  const base =
    typeof rpc === 'string'
      ? createConnectTransport({
          baseUrl: rpc,
          httpVersion: options.httpVersion ?? '2',
          interceptors: [...(options.interceptors ?? []), ...(token ? [bearerInterceptor(token)] : [])],
          ...(tls ? { nodeOptions: { cert: tls.cert, key: tls.key, ca: tls.ca } } : {}),
        })
      : rpc;
  const transport = options.timeoutMs ? withDefaultDeadline(base, options.timeoutMs) : base;
  return Object.fromEntries(
    PLATFORM_SERVICE_NAMES.map((name) => [name, createClient(PLATFORM_SERVICES[name], transport)]),
  ) as unknown as PlatformClients;
}

/** The token of the credentials file `file`. @throws ConfigError RPC_TOKEN_FILE when it holds none. */
function credentialsFileToken(file: string): string {
  const token = readCredentialsFile(file)?.token;
  if (!token) throw new ConfigError('RPC_TOKEN_FILE', `${file} holds no credential`);
  return token;
}

const readPem = (variable: string, file: string): string => readConfiguredFile(variable, file).toString('utf8');

/**
 * What a network client of the RPC presents (a façade, `payments health` probing an api role): RPC_TOKEN or the
 * token of RPC_TOKEN_FILE, and the RPC_CLIENT_TLS_* PEM files.
 * @throws ConfigError naming the variable whose file cannot be read or holds no credential
 */
export function rpcClientCredentials(
  config: Pick<Config, 'RPC_TOKEN' | 'RPC_TOKEN_FILE' | 'RPC_CLIENT_TLS_CERT' | 'RPC_CLIENT_TLS_KEY' | 'RPC_CLIENT_TLS_CA'>,
): RpcClientCredentials {
  return {
    token: config.RPC_TOKEN ?? (config.RPC_TOKEN_FILE && credentialsFileToken(config.RPC_TOKEN_FILE)),
    tls:
      config.RPC_CLIENT_TLS_CERT || config.RPC_CLIENT_TLS_CA
        ? {
            cert: config.RPC_CLIENT_TLS_CERT && readPem('RPC_CLIENT_TLS_CERT', config.RPC_CLIENT_TLS_CERT),
            key: config.RPC_CLIENT_TLS_KEY && readPem('RPC_CLIENT_TLS_KEY', config.RPC_CLIENT_TLS_KEY),
            ca: config.RPC_CLIENT_TLS_CA && readPem('RPC_CLIENT_TLS_CA', config.RPC_CLIENT_TLS_CA),
          }
        : undefined,
  };
}
