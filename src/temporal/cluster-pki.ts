/**
 * The certificates of a cluster's Temporal mTLS (`payments cluster up`, docs/security.md "Temporal"): one CA made for
 * the cluster, a server certificate for the Temporal frontend and its internode traffic, and one client certificate
 * per caller (the api and worker roles, the Web UI, the operator's tools). And those of its internal RPC's mTLS
 * (docs/security.md "Internal RPC"), from a second CA made the same way: the api role's server certificate and a
 * client certificate for the façade (OU=facade, its scope) and the operator's tools. Made once under `<CLUSTER_DIR>/tls`
 * (directory 0700, private keys 0600), like the cluster's service credentials, and kept across restarts; a
 * certificate missing, unreadable, not signed by the CA, lacking a name the server needs, or expiring within
 * RENEW_BEFORE_DAYS is made again (a CA doing so remakes every certificate). node-forge builds the certificates;
 * the keys are Node's (RSA 2048).
 *
 * Every certificate the CA signed is a full client of the cluster's namespace (the server runs no authorizer):
 * revoking one means a new CA (remove the directory and start the cluster again).
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import forge from 'node-forge';
import type { TemporalConnectionOptions } from './connection-options';

/** The callers that get a client certificate. */
export const TEMPORAL_CLIENTS = ['api', 'worker', 'ui', 'operator'] as const;
export type TemporalClient = (typeof TEMPORAL_CLIENTS)[number];

/** The callers of the internal RPC that get a client certificate of the RPC CA. */
export const RPC_CLIENTS = ['facade', 'operator'] as const;
export type RpcClient = (typeof RPC_CLIENTS)[number];

/** The name clients verify the server certificate against (also in its DNS names, beside 127.0.0.1). */
export const TEMPORAL_SERVER_NAME = 'localhost';

const VALIDITY_DAYS = 825;
const RENEW_BEFORE_DAYS = 30;
const DAY_MS = 86_400_000;

/** PEM files of one certificate and its key. */
export interface CertificateFiles {
  cert: string;
  key: string;
}

/** The internal RPC's mTLS (src/rpc/server.ts): its CA, the api role's server certificate, the callers'. */
export interface RpcPki {
  ca: string;
  server: CertificateFiles;
  clients: Record<RpcClient, CertificateFiles>;
}

export interface ClusterPki {
  directory: string;
  /** The internal RPC's certificates, of a CA of their own. */
  rpc: RpcPki;
  /** The CA certificate every party verifies the others with. */
  ca: string;
  /** The Temporal server's certificate: frontend and internode, server and client use. */
  server: CertificateFiles;
  clients: Record<TemporalClient, CertificateFiles>;
  serverName: string;
}

/** The TEMPORAL_TLS_* settings of a client of the cluster (src/temporal/connection-options.ts reads them). */
export function temporalClientSettings(pki: ClusterPki, client: TemporalClient): Record<string, string> {
  return {
    TEMPORAL_TLS_CA: pki.ca,
    TEMPORAL_TLS_CERT: pki.clients[client].cert,
    TEMPORAL_TLS_KEY: pki.clients[client].key,
    TEMPORAL_TLS_SERVER_NAME: pki.serverName,
  };
}

/** The parties exportClusterPki copies files for: Temporal's server and every client, then the RPC's. */
export const PKI_PARTIES = ['server', ...TEMPORAL_CLIENTS, 'rpc-server', ...RPC_CLIENTS.map((client) => `rpc-${client}` as const)] as const;

/**
 * Copies to `directory/<party>/` what each party needs and nothing more: `ca.pem`, `cert.pem`, `key.pem` (the
 * server's, or that client's; for `rpc-server`, `rpc-facade` and `rpc-operator` the RPC CA's and certificates). Each party's container mounts its own subdirectory only (docker-compose), so
 * isolation is by mount: the files are 0644 there because the Temporal images run as users of their own. The CA
 * key is never copied.
 */
export function exportClusterPki(pki: ClusterPki, directory: string): void {
  for (const party of PKI_PARTIES) {
    const target = path.join(directory, party);
    mkdirSync(target, { recursive: true, mode: 0o755 });
    const rpc = party.startsWith('rpc-');
    const files =
      party === 'server' ? pki.server : party === 'rpc-server' ? pki.rpc.server : rpc ? pki.rpc.clients[party.slice(4) as RpcClient] : pki.clients[party as TemporalClient];
    writeFileSync(path.join(target, 'ca.pem'), readFileSync(rpc ? pki.rpc.ca : pki.ca), { mode: 0o644 });
    writeFileSync(path.join(target, 'cert.pem'), readFileSync(files.cert), { mode: 0o644 });
    writeFileSync(path.join(target, 'key.pem'), readFileSync(files.key), { mode: 0o644 });
    for (const name of ['ca.pem', 'cert.pem', 'key.pem']) chmodSync(path.join(target, name), 0o644);
  }
}

/** The RPC_TLS_* settings of the api role: its server certificate, and the CA its callers' certificates need. */
export function rpcServerSettings(pki: ClusterPki): Record<string, string> {
  return { RPC_TLS_CERT: pki.rpc.server.cert, RPC_TLS_KEY: pki.rpc.server.key, RPC_TLS_CLIENT_CA: pki.rpc.ca };
}

/** The RPC_CLIENT_TLS_* settings of a caller of the internal RPC (src/rpc/clients.ts `rpcClientCredentials`). */
export function rpcClientSettings(pki: ClusterPki, client: RpcClient): Record<string, string> {
  return { RPC_CLIENT_TLS_CERT: pki.rpc.clients[client].cert, RPC_CLIENT_TLS_KEY: pki.rpc.clients[client].key, RPC_CLIENT_TLS_CA: pki.rpc.ca };
}

/** The connection options (TLS with this client's certificate) of a client of the cluster, for Connection.connect. */
export function temporalClientOptions(pki: ClusterPki, client: TemporalClient): TemporalConnectionOptions {
  return {
    tls: {
      serverNameOverride: pki.serverName,
      serverRootCACertificate: readFileSync(pki.ca),
      clientCertPair: { crt: readFileSync(pki.clients[client].cert), key: readFileSync(pki.clients[client].key) },
    },
  };
}

function writePrivate(file: string, text: string): void {
  writeFileSync(file, text, { mode: 0o600 });
  chmodSync(file, 0o600);
}

interface Issued {
  cert: forge.pki.Certificate;
  key: forge.pki.rsa.PrivateKey;
}

function newKey(): { forgeKey: forge.pki.rsa.PrivateKey; publicKey: forge.pki.rsa.PublicKey; pem: string } {
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const forgeKey = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
  return { forgeKey, publicKey: forge.pki.setRsaPublicKey(forgeKey.n, forgeKey.e), pem };
}

function issue(options: {
  commonName: string;
  organizationalUnit: string;
  issuer?: Issued;
  extensions: object[];
}): { issued: Issued; certPem: string; keyPem: string } {
  const key = newKey();
  const cert = forge.pki.createCertificate();
  cert.publicKey = key.publicKey;
  // A positive random serial, as RFC 5280 asks, in whole bytes whose first is 0x40-0x7f: DER then needs no leading
  // zero byte. (An odd-length hex serial made node-forge write a padded INTEGER that OpenSSL refuses as "illegal
  // padding", so about one certificate in ten could not be loaded.)
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x3f) | 0x40;
  cert.serialNumber = serial.toString('hex');
  cert.validity.notBefore = new Date(Date.now() - 5 * 60_000);
  cert.validity.notAfter = new Date(Date.now() + VALIDITY_DAYS * DAY_MS);
  const subject = [
    { name: 'commonName', value: options.commonName },
    { shortName: 'OU', value: options.organizationalUnit },
    { name: 'organizationName', value: 'payments cluster' },
  ];
  cert.setSubject(subject);
  cert.setIssuer(options.issuer ? options.issuer.cert.subject.attributes : subject);
  cert.setExtensions([...options.extensions, { name: 'subjectKeyIdentifier' }]);
  cert.sign(options.issuer?.key ?? key.forgeKey, forge.md.sha256.create());
  return { issued: { cert, key: key.forgeKey }, certPem: forge.pki.certificateToPem(cert), keyPem: key.pem };
}

/** The certificate in `file` when it is current, signed by `ca` and carries every name of `names`; else undefined. */
function usable(file: string, ca: forge.pki.Certificate | undefined, names: string[] = []): forge.pki.Certificate | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const cert = forge.pki.certificateFromPem(readFileSync(file, 'utf8'));
    if (cert.validity.notAfter.getTime() - Date.now() < RENEW_BEFORE_DAYS * DAY_MS) return undefined;
    if (ca && !ca.verify(cert)) return undefined;
    const altNames = ((cert.getExtension('subjectAltName') as { altNames?: Array<{ value?: string; ip?: string }> } | null)?.altNames ?? []).map(
      (name) => name.ip ?? name.value,
    );
    return names.every((name) => altNames.includes(name)) ? cert : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The cluster's certificates under `directory`, made when missing or no longer usable (see above).
 * @param hostNames DNS names and IP addresses the server certificate must carry besides localhost and 127.0.0.1
 */
export function ensureClusterPki(directory: string, hostNames: string[] = []): ClusterPki {
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  chmodSync(directory, 0o700);
  const file = (name: string) => path.join(directory, name);
  const pki: ClusterPki = {
    directory,
    ca: file('ca.pem'),
    server: { cert: file('temporal-server.pem'), key: file('temporal-server-key.pem') },
    clients: Object.fromEntries(TEMPORAL_CLIENTS.map((client) => [client, { cert: file(`${client}.pem`), key: file(`${client}-key.pem`) }])) as ClusterPki['clients'],
    serverName: TEMPORAL_SERVER_NAME,
  } as ClusterPki;

  const temporalCa = ensureCa(pki.ca, file('ca-key.pem'), 'payments cluster Temporal CA');
  const names = [...new Set([TEMPORAL_SERVER_NAME, '127.0.0.1', ...hostNames])];
  const leaf = leafMaker(temporalCa, names);
  leaf(pki.server, TEMPORAL_SERVER_NAME, 'temporal-server', true);
  for (const client of TEMPORAL_CLIENTS) leaf(pki.clients[client], client, 'temporal-client', false);

  // The internal RPC's own CA: Temporal's frontend trusts every certificate its CA signed (it runs no authorizer), so
  // a façade certificate from that CA would make the façade a Temporal client.
  const rpcCa = ensureCa(file('rpc-ca.pem'), file('rpc-ca-key.pem'), 'payments cluster RPC CA');
  const rpcLeaf = leafMaker(rpcCa, names);
  pki.rpc = {
    ca: file('rpc-ca.pem'),
    server: { cert: file('rpc-server.pem'), key: file('rpc-server-key.pem') },
    clients: Object.fromEntries(RPC_CLIENTS.map((client) => [client, { cert: file(`rpc-${client}.pem`), key: file(`rpc-${client}-key.pem`) }])) as RpcPki['clients'],
  };
  rpcLeaf(pki.rpc.server, TEMPORAL_SERVER_NAME, 'rpc-server', true);
  // The façade's certificate carries the facade scope (src/rpc/auth.ts reads OUs as scopes); the operator's none:
  // it presents a service credential over it.
  rpcLeaf(pki.rpc.clients.facade, 'facade', 'facade', false);
  rpcLeaf(pki.rpc.clients.operator, 'operator', 'rpc-client', false);
  return pki;
}

/** The CA in `certFile`/`keyFile`, made when missing or no longer usable; `renewAll` when it was made now. */
function ensureCa(certFile: string, keyFile: string, commonName: string): { ca: Issued; renewAll: boolean } {
  const caCert = existsSync(keyFile) ? usable(certFile, undefined) : undefined;
  if (caCert) return { ca: { cert: caCert, key: forge.pki.privateKeyFromPem(readFileSync(keyFile, 'utf8')) as forge.pki.rsa.PrivateKey }, renewAll: false };
  const made = issue({
    commonName,
    organizationalUnit: 'ca',
    extensions: [
      { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  });
  writePrivate(keyFile, made.keyPem);
  writeFileSync(certFile, made.certPem, { mode: 0o644 });
  return { ca: made.issued, renewAll: true };
}

/** Issues a leaf of `authority` into `target` unless a usable one is there (a server's with every one of `names`). */
function leafMaker(authority: { ca: Issued; renewAll: boolean }, names: string[]) {
  const { ca, renewAll } = authority;
  const altName = (name: string) => (/^[\d.]+$/.test(name) || name.includes(':') ? { type: 7, ip: name } : { type: 2, value: name });
  return (target: CertificateFiles, commonName: string, organizationalUnit: string, server: boolean) => {
    if (!renewAll && existsSync(target.key) && usable(target.cert, ca.cert, server ? names : [])) return;
    const made = issue({
      commonName,
      organizationalUnit,
      issuer: ca,
      extensions: [
        { name: 'basicConstraints', cA: false, critical: true },
        { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
        // The server's certificate is also the client certificate of its internode calls.
        { name: 'extKeyUsage', serverAuth: server, clientAuth: true },
        ...(server ? [{ name: 'subjectAltName', altNames: names.map(altName) }] : []),
      ],
    });
    writePrivate(target.key, made.keyPem);
    writeFileSync(target.cert, made.certPem, { mode: 0o644 });
  };
}
