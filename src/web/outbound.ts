/**
 * Where the platform may send a request of its own (docs/security.md "Outbound requests"): merchant `callback_url`
 * webhooks, bank-account activation `call_back`s and preorder `call_back_url`s. The upstream payin provider
 * (UPSTREAM_PAYIN_URL) is the operator's choice and is not checked here.
 *
 * A URL is refused when it is not http(s) (not https in live mode), or when it points at an address that is not
 * public unicast: loopback, RFC 1918 and unique-local, link-local, CGNAT, multicast, unspecified, reserved ranges
 * (ipaddr.js decides the range; IPv4-mapped IPv6 counts as its IPv4 address), or at the platform's own ports.
 * Cloud metadata addresses (169.254.169.254, fd00:ec2::254) are refused always.
 *
 * The check runs twice: on the URL when it is stored (onboarding, request time) and on the resolved address when
 * connecting (the dispatcher's DNS lookup), so a name that resolves to a public address at onboarding and to
 * 127.0.0.1 later (DNS rebinding) is still refused.
 *
 * Development and tests open it: OUTBOUND_ALLOWED_HOSTS (`host:port` pairs that may be private) and
 * OUTBOUND_ALLOW_PRIVATE_NETWORKS=true (every private address; never metadata).
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import ipaddr from 'ipaddr.js';
import { Agent, type Dispatcher } from 'undici';
import type { Config } from '../config';

/** Addresses refused whatever is allowed: where cloud instances serve their credentials. */
const METADATA_ADDRESSES = new Set(['169.254.169.254', 'fd00:ec2::254']);

/** One line, safe to show the URL's owner: why a destination is refused. */
export type OutboundRefusal = 'scheme' | 'https required' | 'private address' | 'metadata address' | 'platform port' | 'not a URL';

export interface OutboundPolicy {
  /**
   * Checks a URL before it is stored or called. Host names are checked by name only here (`localhost` and
   * IP literals); their addresses are checked when connecting.
   * @returns the refusal, or undefined when the URL may be called
   */
  checkUrl(url: string): OutboundRefusal | undefined;
  /** The undici dispatcher every outbound request uses: its DNS lookup refuses what `checkUrl` would. */
  dispatcher: Dispatcher;
  close(): Promise<void>;
}

/** How an address may be reached: `public`, `private` (allowed only when opened) or `metadata` (never). */
export function addressClass(address: string): 'public' | 'private' | 'metadata' {
  if (!ipaddr.isValid(address)) return 'private';
  const parsed = ipaddr.process(address);
  if (METADATA_ADDRESSES.has(parsed.toNormalizedString()) || METADATA_ADDRESSES.has(parsed.toString())) return 'metadata';
  return parsed.range() === 'unicast' ? 'public' : 'private';
}

function defaultPort(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/** Error of a connection refused by the policy (what a failed webhook attempt records). */
export class OutboundRefusedError extends Error {
  constructor(readonly refusal: OutboundRefusal) {
    super(`destination refused: ${refusal}`);
    this.name = 'OutboundRefusedError';
  }
}

export interface OutboundOptions {
  allowPrivate: boolean;
  /** Lowercase `host:port` pairs that may be private. */
  allowedHosts: ReadonlySet<string>;
  /** The platform's own listening ports (façade, RPC). */
  platformPorts: ReadonlySet<number>;
  requireHttps: boolean;
  /** Name resolution (tests swap it to simulate a rebinding name). */
  lookup?: typeof dnsLookup;
}

export function outboundOptionsFromConfig(config: Config): OutboundOptions {
  const allowedHosts = new Set(
    (config.OUTBOUND_ALLOWED_HOSTS ?? '')
      .split(',')
      .map((entry) => entry.trim().toLowerCase())
      .filter(Boolean),
  );
  return {
    allowPrivate: config.OUTBOUND_ALLOW_PRIVATE_NETWORKS,
    allowedHosts,
    platformPorts: new Set([config.HTTP_PORT, config.RPC_PORT].filter((port) => port > 0)),
    requireHttps: config.PAYMENTS_MODE === 'live',
  };
}

/** Builds the policy and its guarded dispatcher (one per process, created at the composition root). */
export function createOutboundPolicy(options: OutboundOptions): OutboundPolicy {
  const resolve = options.lookup ?? dnsLookup;
  const isAllowedHost = (host: string, port: number) => options.allowedHosts.has(`${host.toLowerCase()}:${port}`);
  const refusalOfAddress = (address: string, opened: boolean): OutboundRefusal | undefined => {
    const kind = addressClass(address);
    if (kind === 'metadata') return 'metadata address';
    if (kind === 'private' && !opened) return 'private address';
    return undefined;
  };

  function checkUrl(text: string): OutboundRefusal | undefined {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return 'not a URL';
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'scheme';
    if (options.requireHttps && url.protocol !== 'https:') return 'https required';
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    const port = defaultPort(url);
    const opened = options.allowPrivate || isAllowedHost(host, port);
    if (ipaddr.isValid(host)) {
      const refusal = refusalOfAddress(host, opened);
      if (refusal) return refusal;
      if (addressClass(host) === 'private' && options.platformPorts.has(port) && !isAllowedHost(host, port)) return 'platform port';
      return undefined;
    }
    if (host === 'localhost' || host.endsWith('.localhost')) {
      if (!opened) return 'private address';
      if (options.platformPorts.has(port) && !isAllowedHost(host, port)) return 'platform port';
    }
    return undefined;
  }

  const agent = new Agent({
    connect: {
      // Every name is resolved here, and every address it resolves to is checked: a refused one fails the
      // connection before a byte is sent.
      lookup(hostname, lookupOptions, callback) {
        resolve(hostname, { ...lookupOptions, all: true }, (error, addresses) => {
          if (error) return callback(error, '', 0);
          const list = addresses as unknown as LookupAddress[];
          // The port is not known here; `checkUrl` matched host and port before the request was made.
          const opened = options.allowPrivate || [...options.allowedHosts].some((entry) => entry.startsWith(`${hostname.toLowerCase()}:`));
          for (const entry of list) {
            const refusal = refusalOfAddress(entry.address, opened);
            if (refusal) return callback(new OutboundRefusedError(refusal), '', 0);
          }
          const first = list[0];
          if (!first) return callback(new Error(`${hostname} has no address`), '', 0);
          if ((lookupOptions as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
          return callback(null, first.address, first.family);
        });
      },
    },
  });
  return { checkUrl, dispatcher: agent, close: () => agent.close() };
}
