/**
 * How every Temporal connection (the api role's client, the worker) authenticates the server and itself:
 *
 *   TEMPORAL_TLS=true                      TLS, server verified against the system CAs (or TEMPORAL_TLS_CA)
 *   TEMPORAL_TLS_CA                        PEM file of the CA that signed the frontend's certificate
 *   TEMPORAL_TLS_CERT + TEMPORAL_TLS_KEY   client certificate (mTLS, e.g. a self-hosted cluster's internode PKI)
 *   TEMPORAL_TLS_SERVER_NAME               the name to verify when it differs from TEMPORAL_ADDRESS's host
 *   TEMPORAL_API_KEY                       API key sent on every call (Temporal Cloud); implies TLS
 *
 * A non-loopback TEMPORAL_ADDRESS without TLS is refused by the configuration (src/config.ts) unless
 * TEMPORAL_ALLOW_INSECURE=true: a Temporal frontend accepts signals and updates from whoever reaches it.
 */
import { loadConfig, readConfiguredFile, temporalUsesTls, type Config } from '../config';

/** TLS and API key of a connection; the same shape fits `Connection.connect` and `NativeConnection.connect`. */
export interface TemporalConnectionOptions {
  tls?: {
    serverNameOverride?: string;
    serverRootCACertificate?: Buffer;
    clientCertPair?: { crt: Buffer; key: Buffer };
  };
  apiKey?: string;
}

/** @throws ConfigError naming the variable whose file cannot be read. */
export function temporalConnectionOptions(config: Config): TemporalConnectionOptions {
  if (!temporalUsesTls(config)) return {};
  return {
    tls: {
      ...(config.TEMPORAL_TLS_SERVER_NAME ? { serverNameOverride: config.TEMPORAL_TLS_SERVER_NAME } : {}),
      ...(config.TEMPORAL_TLS_CA ? { serverRootCACertificate: readConfiguredFile('TEMPORAL_TLS_CA', config.TEMPORAL_TLS_CA) } : {}),
      ...(config.TEMPORAL_TLS_CERT && config.TEMPORAL_TLS_KEY
        ? { clientCertPair: { crt: readConfiguredFile('TEMPORAL_TLS_CERT', config.TEMPORAL_TLS_CERT), key: readConfiguredFile('TEMPORAL_TLS_KEY', config.TEMPORAL_TLS_KEY) } }
        : {}),
    },
    ...(config.TEMPORAL_API_KEY ? { apiKey: config.TEMPORAL_API_KEY } : {}),
  };
}

/**
 * The Temporal CLI flags reaching the same frontend as `config` (`--address`, and the TLS ones: file paths only;
 * an API key is referred to by its variable, never written out), for the commands start-up messages give.
 */
export function temporalCliFlags(config: Config): string[] {
  const flags = [`--address ${config.TEMPORAL_ADDRESS ?? '127.0.0.1:7233'}`];
  if (config.TEMPORAL_TLS_CA) flags.push(`--tls-ca-path ${config.TEMPORAL_TLS_CA}`);
  if (config.TEMPORAL_TLS_CERT && config.TEMPORAL_TLS_KEY) flags.push(`--tls-cert-path ${config.TEMPORAL_TLS_CERT}`, `--tls-key-path ${config.TEMPORAL_TLS_KEY}`);
  if (config.TEMPORAL_TLS_SERVER_NAME) flags.push(`--tls-server-name ${config.TEMPORAL_TLS_SERVER_NAME}`);
  if (temporalUsesTls(config) && flags.length === 1) flags.push('--tls');
  if (config.TEMPORAL_API_KEY) flags.push('--api-key "$TEMPORAL_API_KEY"');
  return flags;
}

/** The Temporal settings of an environment (TEMPORAL_TLS*, TEMPORAL_API_KEY), for tools that keep no configuration. */
const TEMPORAL_SECURITY_VARIABLES = ['TEMPORAL_TLS', 'TEMPORAL_TLS_CA', 'TEMPORAL_TLS_CERT', 'TEMPORAL_TLS_KEY', 'TEMPORAL_TLS_SERVER_NAME', 'TEMPORAL_API_KEY'] as const;

/**
 * The connection options of `environment`'s TEMPORAL_TLS* and TEMPORAL_API_KEY (benches and scripts that connect
 * to a cluster's mTLS frontend without a configuration of their own).
 * @throws ConfigError naming a bad variable or an unreadable file
 */
export function temporalConnectionOptionsFromEnvironment(environment: NodeJS.ProcessEnv = process.env): TemporalConnectionOptions {
  // Test mode only so that live mode's checks of other variables (none given here) cannot refuse it.
  return temporalConnectionOptions(loadConfig({ ...temporalSecuritySettings(environment), PAYMENTS_MODE: 'test' }));
}

/** Those variables of `environment` that are set, for passing them on to a configuration. */
export function temporalSecuritySettings(environment: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return Object.fromEntries(TEMPORAL_SECURITY_VARIABLES.flatMap((name) => (environment[name] ? [[name, environment[name]!]] : [])));
}
