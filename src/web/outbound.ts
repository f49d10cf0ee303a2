/**
 * Where the platform may send a request of its own (docs/security.md "Outbound requests"): merchant `callback_url`
 * webhooks, bank-account activation `call_back`s and preorder `call_back_url`s. The upstream payin provider
 * (UPSTREAM_PAYIN_URL) is the operator's choice and is not checked here.
 *
 * A URL is refused when it is not http(s) (not https in live mode), or when it points at an address that is not
 * public unicast: loopback, RFC 1918 and unique-local, link-local, CGNAT, multicast, unspecified, reserved ranges,
 * IPv6 outside 2000::/3 (ipaddr.js decides the range; IPv4-mapped IPv6 counts as its IPv4 address), or at the
 * platform's own ports on such an address. Cloud metadata addresses are refused always.
 *
 * The check runs twice: on the URL when it is stored (onboarding, request time) and on the resolved address when
 * connecting (the dispatcher's connector, which knows host, port and every address the name resolves to), so a name
 * that resolves to a public address at onboarding and to 127.0.0.1 later (DNS rebinding) is still refused.
 *
 * Development and tests open it: OUTBOUND_ALLOWED_HOSTS (`host:port` pairs that may be private, matched on the
 * URL's host exactly as written) and OUTBOUND_ALLOW_PRIVATE_NETWORKS=true (every private address but the
 * platform's own ports; never metadata).
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { LRUCache } from 'lru-cache';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import type { Config } from '../config';

/**
 * Addresses refused whatever is opened: where cloud instances and containers serve their credentials. The
 * instance metadata service of AWS, GCP, Azure, Oracle and DigitalOcean (169.254.169.254, AWS's IPv6
 * fd00:ec2::254), AWS ECS task credentials (169.254.170.2), AWS EKS Pod Identity (169.254.170.23, fd00:ec2::23),
 * Alibaba Cloud's metadata (100.100.100.200) and Azure's WireServer (168.63.129.16, a public address).
 */
const METADATA_ADDRESSES = new Set(['169.254.169.254', 'fd00:ec2::254', '169.254.170.2', '169.254.170.23', 'fd00:ec2::23', '100.100.100.200', '168.63.129.16']);

/** IPv6 global unicast: everything outside it (IPv4-compatible ::a.b.c.d, discard, site-local, …) is not public. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];

/** Connectors kept, one per destination port (each with its own TLS session cache). */
const MAX_CONNECTORS = 64;

/** Why a destination is refused: one short phrase, safe to show the URL's owner and to record. */
export type OutboundRefusal = 'scheme' | 'https required' | 'private address' | 'metadata address' | 'platform port' | 'not a URL';

export interface OutboundPolicy {
  /**
   * Checks a URL before it is stored or called. Host names are checked by name only here (`localhost`,
   * `*.localhost` and IP literals); the addresses a name resolves to are checked when connecting.
   * @returns the refusal, or undefined when the URL may be called
   */
  checkUrl(url: string): OutboundRefusal | undefined;
  /**
   * The undici dispatcher every outbound request uses. Its connector refuses what `checkUrl` would, on the
   * address actually connected to (an IP literal, or every address the name resolves to), before a byte is sent:
   * the request fails with OutboundRefusedError.
   */
  dispatcher: Dispatcher;
  /** Adds a port the platform listens on once it is bound (HTTP_PORT or RPC_PORT 0 picks a free one). */
  protectPort(port: number): void;
  close(): Promise<void>;
}

/** IPv4 embedded in a NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address: what a gateway would forward it to. */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const parts = address.parts;
  if (address.range() === 'rfc6052' && parts[0] === 0x64 && parts[1] === 0xff9b && parts[2] === 0) {
    return new ipaddr.IPv4([parts[6]! >> 8, parts[6]! & 0xff, parts[7]! >> 8, parts[7]! & 0xff]);
  }
  if (address.range() === '6to4') return new ipaddr.IPv4([parts[1]! >> 8, parts[1]! & 0xff, parts[2]! >> 8, parts[2]! & 0xff]);
  return undefined;
}

/**
 * How an address may be reached: `public` (global unicast), `private` (allowed only when opened) or `metadata`
 * (never). Anything that is not an IP address counts as private.
 */
export function addressClass(address: string): 'public' | 'private' | 'metadata' {
  if (!ipaddr.isValid(address)) return 'private';
  const parsed = ipaddr.process(address);
  const embedded = parsed.kind() === 'ipv6' ? embeddedIPv4(parsed as ipaddr.IPv6) : undefined;
  for (const candidate of embedded ? [parsed, embedded] : [parsed]) {
    if (METADATA_ADDRESSES.has(candidate.toNormalizedString()) || METADATA_ADDRESSES.has(candidate.toString())) return 'metadata';
  }
  if (parsed.range() !== 'unicast') return 'private';
  if (parsed.kind() === 'ipv6' && !(parsed as ipaddr.IPv6).match(GLOBAL_UNICAST_V6)) return 'private';
  return 'public';
}

/** Error of a destination refused by the policy (what a failed webhook attempt records: no address, no detail). */
export class OutboundRefusedError extends Error {
  constructor(readonly refusal: OutboundRefusal) {
    super(`destination refused: ${refusal}`);
    this.name = 'OutboundRefusedError';
  }
}

export interface OutboundOptions {
  allowPrivate: boolean;
  /** `host:port` pairs that may be private: lowercase host, IPv6 without brackets (outboundOptionsFromConfig). */
  allowedHosts: ReadonlySet<string>;
  /** The platform's own listening ports (façade, RPC, metrics, sandbox upstream). */
  platformPorts: ReadonlySet<number>;
  requireHttps: boolean;
  /** Name resolution (tests swap it to simulate a rebinding name). */
  lookup?: typeof dnsLookup;
}

/**
 * The dev stack's and a demo-seeded cluster's merchants are local receivers (the demo merchant's callback_url is
 * http://127.0.0.1:3999/…):
 * outbound requests may reach private addresses, unless the operator chose what may be reached by setting
 * OUTBOUND_ALLOWED_HOSTS or OUTBOUND_ALLOW_PRIVATE_NETWORKS (to anything, `false` included). Metadata addresses
 * stay refused either way (docs/security.md "Outbound requests").
 */
export function devOutboundDefaults(config: Config, environment: NodeJS.ProcessEnv = process.env): Config {
  if (config.OUTBOUND_ALLOWED_HOSTS || environment.OUTBOUND_ALLOW_PRIVATE_NETWORKS) return { ...config };
  return { ...config, OUTBOUND_ALLOW_PRIVATE_NETWORKS: true };
}

export function outboundOptionsFromConfig(config: Config): OutboundOptions {
  const allowedHosts = new Set(
    (config.OUTBOUND_ALLOWED_HOSTS ?? '')
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean)
      .map(hostPortKey),
  );
  const ports = [config.HTTP_PORT, config.RPC_PORT, config.METRICS_PORT, config.TEMPORAL_METRICS_PORT];
  // `npm start` runs the sandbox upstream on SANDBOX_PORT in test mode; its pay/close endpoints are the platform's.
  if (config.PAYMENTS_MODE === 'test') ports.push(config.SANDBOX_PORT);
  return {
    allowPrivate: config.OUTBOUND_ALLOW_PRIVATE_NETWORKS,
    allowedHosts,
    platformPorts: new Set(ports.filter((port) => port > 0)),
    requireHttps: config.PAYMENTS_MODE === 'live',
  };
}

/**
 * `host:port` as the policy compares it: the host as a URL's parser writes it (lowercase, IPv6 without brackets and
 * compressed, IPv4 dotted), the port as a number.
 */
function hostPortKey(entry: string): string {
  const match = /^(.+):(\d{1,5})$/.exec(entry);
  if (!match) return entry.toLowerCase();
  let host = match[1]!;
  try {
    host = new URL(`http://${host}/`).hostname;
  } catch {
    // Left as written: it then matches no URL.
  }
  return `${bareHost(host)}:${Number(match[2])}`;
}

function bareHost(hostname: string): string {
  return hostname.replace(/^\[|\]$/g, '').toLowerCase();
}

/** RFC 6761: `localhost` and names under it are loopback, whatever a resolver says. */
function isLocalhostName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost');
}

/** Builds the policy and its guarded dispatcher (one per process, created at the composition root). */
export function createOutboundPolicy(options: OutboundOptions): OutboundPolicy {
  const resolve = options.lookup ?? dnsLookup;
  const platformPorts = new Set(options.platformPorts);

  /** The refusal of connecting to `address` for a URL naming `host` (as written) and `port`. */
  function refusalOf(host: string, port: number, address: string): OutboundRefusal | undefined {
    const kind = addressClass(address);
    if (kind === 'metadata') return 'metadata address';
    if (kind === 'public') return undefined;
    if (options.allowedHosts.has(`${host}:${port}`)) return undefined;
    if (!options.allowPrivate) return 'private address';
    return platformPorts.has(port) ? 'platform port' : undefined;
  }

  function checkUrl(text: string): OutboundRefusal | undefined {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return 'not a URL';
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'scheme';
    if (options.requireHttps && url.protocol !== 'https:') return 'https required';
    const host = bareHost(url.hostname);
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    if (ipaddr.isValid(host)) return refusalOf(host, port, host);
    if (isLocalhostName(host)) return refusalOf(host, port, '127.0.0.1');
    return undefined;
  }

  /** Node's `lookup` for connections to `host`:`port`: resolves, then refuses if any address is refused. */
  function guardedLookup(port: number) {
    return (hostname: string, lookupOptions: LookupOptions, callback: (error: Error | null, address: string | LookupAddress[], family?: number) => void) => {
      const host = bareHost(hostname);
      resolve(host, { ...lookupOptions, all: true }, (error, resolved) => {
        if (error) return callback(error, '', 0);
        const addresses = resolved as unknown as LookupAddress[];
        // A name under localhost is loopback whatever it resolves to; every other address is checked as it is.
        const checked = isLocalhostName(host) ? ['127.0.0.1', ...addresses.map((entry) => entry.address)] : addresses.map((entry) => entry.address);
        for (const address of checked) {
          const refusal = refusalOf(host, port, address);
          if (refusal) return callback(new OutboundRefusedError(refusal), '', 0);
        }
        const first = addresses[0];
        if (!first) return callback(new Error(`${host} has no address`), '', 0);
        if (lookupOptions.all) return callback(null, addresses);
        return callback(null, first.address, first.family);
      });
    };
  }

  // One undici connector per destination port, each resolving names through the guarded lookup for that port
  // (Node's lookup is not told the port). IP literals are never looked up, so they are checked before connecting.
  const connectors = new LRUCache<number, buildConnector.connector>({ max: MAX_CONNECTORS });
  const connect: buildConnector.connector = (connectOptions, callback) => {
    const port = connectOptions.port ? Number(connectOptions.port) : connectOptions.protocol === 'https:' ? 443 : 80;
    const host = bareHost(connectOptions.hostname);
    if (isIP(host)) {
      const refusal = refusalOf(host, port, host);
      if (refusal) return callback(new OutboundRefusedError(refusal), null);
    }
    let connector = connectors.get(port);
    if (!connector) {
      connector = buildConnector({ lookup: guardedLookup(port) as never });
      connectors.set(port, connector);
    }
    connector(connectOptions, callback);
  };
  const agent = new Agent({ connect });
  return {
    checkUrl,
    dispatcher: agent,
    protectPort: (port) => {
      if (port > 0) platformPorts.add(port);
    },
    close: () => agent.close(),
  };
}
