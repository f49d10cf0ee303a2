/**
 * `payments admin ...` (platform decisions §2): onboarding and operator commands over the AdminService
 * (Connect, `RPC_URL`, default http://127.0.0.1:8080). With `--json` each command prints exactly one JSON object
 * on stdout; without it, `key: value` lines. A failure exits 1 with one line on stderr. Amounts are decimal strings.
 *
 *   admin partner create --name N --public-key FILE [--float AMOUNT]
 *   admin merchant create --name N --callback-url URL [--signature-header H] [--public-key FILE] [--payin-fee-percent P]
 *   admin merchant suspend|resume --merchant-id ID
 *   admin merchant list [--status active|suspended] [--limit N] [--before MERCHANT_ID]   newest first, no secret
 *   admin merchant show MERCHANT_ID                          one merchant and its wallet balances, no secret
 *   admin partner suspend|resume --partner-id ID
 *   admin user create --phone P --first-name F --last-name L [--currency USD] [--merchant-id ID] [--not-eligible]
 *   admin wallet credit --user-id ID | --merchant-id ID | --partner-id ID --amount A --currency C --reference R
 *   admin wallet balance --user-id ID | --merchant-id ID | --partner-id ID
 *   admin ledger check
 *   admin credentials create --scope S [--scope …] --name N  S: admin, mint, credentials, ledger-write, facade,
 *                                                           partner:<id>, merchant:<id>
 *   admin credentials revoke --credential-id ID
 *   admin credentials list
 *   admin reconcile [--report-only] [--grace-seconds N]   exits 1 when anything is left for an operator
 *   admin keys rotate [--reseal-only]                      a new data key; every secret at rest re-sealed under it
 *   admin audit list [--limit N] [--credential-id ID] [--procedure P]   the audit trail, newest first
 *
 * Every call presents the operator's service credential: PAYMENTS_ADMIN_TOKEN, the file named by
 * PAYMENTS_ADMIN_CREDENTIALS, or the dev stack's `.data/admin-credentials.json` (src/service-credentials/files.ts).
 * Its scopes decide what it may do: `admin` for most commands, `mint` for `wallet credit` and `partner create
 * --float`, `credentials` for `credentials …` and `keys rotate` (docs/security.md "Internal RPC").
 */
import { readFileSync } from 'node:fs';
import { Code } from '@connectrpc/connect';
import type { Command } from 'commander';
import { MerchantStatus, type MerchantRecord, type WalletBalance } from '../gen/payments/admin/v1/admin_pb';
import { stringifyJson } from '../money';
import { createPlatformClients, type PlatformClients, type RpcClientCredentials } from '../rpc/clients';
import { readRpcFailure } from '../rpc/errors';
import { adminToken } from '../service-credentials/files';

export const DEFAULT_RPC_URL = 'http://127.0.0.1:8080';

/** One line, whatever the input. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Describes a failed admin call in one line (reason, message and failing fields). */
export function describeFailure(error: unknown, rpcUrl: string): string {
  if (error instanceof CliError) return error.message;
  const failure = readRpcFailure(error);
  if (failure.code === Code.Unavailable && failure.reason === 'INTERNAL') {
    return oneLine(`error: cannot reach the AdminService at ${rpcUrl}: ${failure.message}`);
  }
  if (failure.code === Code.Unauthenticated) {
    return 'error: UNAUTHENTICATED: no valid service credential (set PAYMENTS_ADMIN_TOKEN or PAYMENTS_ADMIN_CREDENTIALS, or run from the directory of `npm start`)';
  }
  if (failure.code === Code.PermissionDenied) {
    return oneLine(`error: PERMISSION_DENIED: the credential lacks the scope this command needs (${failure.message}; docs/security.md "Internal RPC")`);
  }
  const fields = Object.entries(failure.fields)
    .map(([field, messages]) => `${field}: ${messages.join(', ')}`)
    .join('; ');
  return oneLine(`error: ${failure.reason}: ${failure.message}${fields ? ` (${fields})` : ''}`);
}

class CliError extends Error {}

function readKeyFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliError(oneLine(`error: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`));
  }
}

interface OwnerOptions {
  userId?: string;
  merchantId?: string;
  partnerId?: string;
}

function owner(options: OwnerOptions) {
  const given = [options.userId, options.merchantId, options.partnerId].filter((value) => value !== undefined);
  if (given.length !== 1) throw new CliError('error: give exactly one of --user-id, --merchant-id and --partner-id');
  return { userId: options.userId ?? '', merchantId: options.merchantId ?? '', partnerId: options.partnerId ?? '' };
}

function print(result: Record<string, unknown>, json: boolean): void {
  if (json) {
    process.stdout.write(`${stringifyJson(result)}\n`);
    return;
  }
  for (const [key, value] of Object.entries(result)) {
    if (typeof value === 'string' && value.includes('\n')) process.stdout.write(`${key}:\n${value.trimEnd()}\n`);
    else process.stdout.write(`${key}: ${typeof value === 'object' ? stringifyJson(value) : String(value)}\n`);
  }
}

/**
 * The operator's client certificate for an RPC server that runs mTLS (`payments cluster up`, compose): the PEM files
 * RPC_CLIENT_TLS_CERT, RPC_CLIENT_TLS_KEY and RPC_CLIENT_TLS_CA (which verifies the server), when set.
 */
function adminTls(environment: NodeJS.ProcessEnv = process.env): RpcClientCredentials['tls'] {
  const { RPC_CLIENT_TLS_CERT: cert, RPC_CLIENT_TLS_KEY: key, RPC_CLIENT_TLS_CA: ca } = environment;
  if (!cert && !ca) return undefined;
  const read = (file: string | undefined) => (file ? readFileSync(file, 'utf8') : undefined);
  return { cert: read(cert), key: read(key), ca: read(ca) };
}

/** Connect clients presenting the operator's credential (when one is found), over its certificate when set. */
export function adminClients(rpcUrl: string): PlatformClients {
  return createPlatformClients(rpcUrl, { httpVersion: '1.1', credentials: { token: adminToken(), tls: adminTls() } });
}

/** Runs one command: builds the clients, prints the result, or prints one stderr line and exits 1. */
function action<O extends { json?: boolean }>(run: (clients: PlatformClients, options: O) => Promise<Record<string, unknown>>) {
  return async (options: O) => {
    const rpcUrl = process.env.RPC_URL || DEFAULT_RPC_URL;
    let code = 0;
    try {
      const clients = adminClients(rpcUrl);
      print(await run(clients, options), Boolean(options.json));
    } catch (error) {
      process.stderr.write(`${describeFailure(error, rpcUrl)}\n`);
      code = 1;
    }
    // Flush stdout, then exit (no keep-alive socket holds the process open).
    process.stdout.write('', () => process.exit(code || Number(process.exitCode ?? 0)));
  };
}

/** Most merchants one `merchant list` answers (ListMerchants' limit). */
const MERCHANT_LIST_MAX = 500;

/** A merchant in the CLI's JSON (snake_case, as every admin command prints). */
function merchantJson(merchant: MerchantRecord): Record<string, unknown> {
  return {
    merchant_id: merchant.merchantId,
    name: merchant.name,
    status: merchant.status,
    callback_url: merchant.callbackUrl,
    signature_header: merchant.signatureHeader,
    payin_fee_percent: merchant.payinFeePercent,
    api_user_name: merchant.apiUserName,
    created_at: merchant.createdAt,
  };
}

/** A wallet's balance in the CLI's JSON: decimal strings and minor units. */
function walletJson(item: WalletBalance): Record<string, unknown> {
  return {
    currency: item.currency,
    balance: item.balance,
    balance_units: item.balanceUnits,
    decimals: item.decimals,
    available_units: item.availableUnits,
    available: item.available,
    held_units: item.heldUnits,
    kind: item.kind,
  };
}

/** `<noun> suspend|resume --<noun>-id ID`: the change applies on the partner's or merchant's next request. */
function addStatusCommands(
  group: Command,
  noun: 'partner' | 'merchant',
  set: (clients: PlatformClients, id: string, status: MerchantStatus) => Promise<Record<string, unknown>>,
): void {
  for (const [name, status] of [
    ['suspend', MerchantStatus.SUSPENDED],
    ['resume', MerchantStatus.ACTIVE],
  ] as const) {
    group
      .command(name)
      .description(`${name} a ${noun} (applies on its next request)`)
      .requiredOption(`--${noun}-id <id>`, `${noun} id`)
      .option('--json', 'print one JSON object')
      .action(
        action<{ partnerId?: string; merchantId?: string; json?: boolean }>((clients, options) =>
          set(clients, (noun === 'partner' ? options.partnerId : options.merchantId) ?? '', status),
        ),
      );
  }
}

/** Adds `admin` and its subcommands to the `payments` program. */
export function registerAdminCommands(program: Command): void {
  const admin = program.command('admin').description('onboarding and operations over the AdminService (RPC_URL)');
  admin.showHelpAfterError(false);

  const partner = admin.command('partner').description('partners (Area A)');
  partner
    .command('create')
    .description('create a partner; prints its credentials once')
    .requiredOption('--name <name>', 'partner name')
    .requiredOption('--public-key <file>', "the partner's RSA public key (PEM file, 2048 bits or more)")
    .option('--float <amount>', 'initial USD float, decimal (credited from the platform settlement account)')
    .option('--json', 'print one JSON object')
    .action(
      action<{ name: string; publicKey: string; float?: string; json?: boolean }>(async (clients, options) => {
        const result = await clients.admin.createPartner({
          name: options.name,
          publicKeyPem: readKeyFile(options.publicKey),
          floatAmount: options.float ?? '',
        });
        return {
          partner_id: result.partnerId,
          partner_secret_key: result.partnerSecretKey,
          user_name: result.userName,
          password: result.password,
          platform_public_key: result.platformPublicKey,
          field_encryption_public_key: result.fieldEncryptionPublicKey,
        };
      }),
    );

  addStatusCommands(partner, 'partner', async (clients, id, status) => {
    const result = await clients.admin.setPartnerStatus({ partnerId: id, status });
    return { partner_id: result.partnerId, status: result.status };
  });

  const merchant = admin.command('merchant').description('merchants (Areas B and C)');
  merchant
    .command('create')
    .description('create a merchant; prints its credentials once')
    .requiredOption('--name <name>', 'merchant name')
    .requiredOption('--callback-url <url>', 'webhook URL (Area B)')
    .option('--signature-header <header>', 'webhook signature header', 'X-Signature')
    .option('--public-key <file>', "the merchant's RSA public key (PEM); omitted: a key pair is generated")
    .option('--payin-fee-percent <percent>', 'payin fee percent, decimal', '1.0')
    .option('--json', 'print one JSON object')
    .action(
      action<{ name: string; callbackUrl: string; signatureHeader: string; publicKey?: string; payinFeePercent: string; json?: boolean }>(
        async (clients, options) => {
          const result = await clients.admin.createMerchant({
            name: options.name,
            callbackUrl: options.callbackUrl,
            signatureHeader: options.signatureHeader,
            publicKeyPem: options.publicKey ? readKeyFile(options.publicKey) : '',
            payinFeePercent: options.payinFeePercent,
          });
          return {
            merchant_id: result.merchantId,
            merchant_secret_key: result.merchantSecretKey,
            api_user_name: result.apiUserName,
            api_password: result.apiPassword,
            api_key: result.apiKey,
            hmac_secret: result.hmacSecret,
            signature_header: result.signatureHeader,
            platform_public_key: result.platformPublicKey,
            field_encryption_public_key: result.fieldEncryptionPublicKey,
            ...(result.privateKey !== undefined ? { private_key: result.privateKey } : {}),
          };
        },
      ),
    );
  addStatusCommands(merchant, 'merchant', async (clients, id, status) => {
    const result = await clients.admin.setMerchantStatus({ merchantId: id, status });
    return { merchant_id: result.merchantId, status: result.status };
  });
  merchant
    .command('list')
    .description(`merchants, newest first (at most ${MERCHANT_LIST_MAX} a page; --before the last id of a page for the next); no secret`)
    .option('--status <status>', 'only active or suspended merchants')
    .option('--limit <n>', `at most this many, 1 to ${MERCHANT_LIST_MAX}`, '100')
    .option('--before <merchant_id>', 'the merchants created before this one (the next page)')
    .option('--json', 'print one JSON object')
    .action(
      action<{ status?: string; limit: string; before?: string; json?: boolean }>(async (clients, options) => {
        const limit = Number(options.limit);
        if (!/^\d{1,3}$/.test(options.limit) || limit < 1 || limit > MERCHANT_LIST_MAX) throw new CliError(`error: --limit must be 1 to ${MERCHANT_LIST_MAX} (got ${options.limit})`);
        if (options.status !== undefined && options.status !== 'active' && options.status !== 'suspended') {
          throw new CliError(`error: --status must be active or suspended (got ${options.status})`);
        }
        const result = await clients.admin.listMerchants({ limit, status: options.status ?? '', beforeMerchantId: options.before ?? '' });
        return { merchants: result.merchants.map(merchantJson) };
      }),
    );
  merchant
    .command('show')
    .description("one merchant (no secret) and its wallet balances")
    .argument('<merchant_id>', 'the merchant id')
    .option('--json', 'print one JSON object')
    .action((merchantId: string, options: { json?: boolean }) =>
      action<{ json?: boolean }>(async (clients) => {
        const result = await clients.admin.getMerchant({ merchantId });
        return { merchant: merchantJson(result.merchant!), wallets: result.wallets.map(walletJson) };
      })(options),
    );

  const user = admin.command('user').description('users (wallet holders, Area A receivers)');
  user
    .command('create')
    .description('create a user with a wallet')
    .requiredOption('--phone <phone>', 'phone number: 0…, 855… or +855…')
    .requiredOption('--first-name <name>', 'first name')
    .requiredOption('--last-name <name>', 'last name')
    .option('--currency <currency>', 'wallet currency', 'USD')
    .option('--merchant-id <id>', 'the merchant the user belongs to')
    .option('--email <email>', 'email address')
    .option('--not-eligible', 'the user may not receive Area A transfers')
    .option('--json', 'print one JSON object')
    .action(
      action<{
        phone: string;
        firstName: string;
        lastName: string;
        currency: string;
        merchantId?: string;
        email?: string;
        notEligible?: boolean;
        json?: boolean;
      }>(async (clients, options) => {
        const result = await clients.admin.createUser({
          phoneNumber: options.phone,
          firstName: options.firstName,
          lastName: options.lastName,
          currency: options.currency,
          merchantId: options.merchantId ?? '',
          email: options.email ?? '',
          notEligible: Boolean(options.notEligible),
        });
        return {
          user_id: result.userId,
          phone_number: result.phoneNumber,
          user_token: result.userToken,
          wallet_ref: result.walletRef,
          currency: result.currency,
          eligible: result.eligible,
        };
      }),
    );

  const wallet = admin.command('wallet').description('wallet balances and operator credits');
  wallet
    .command('credit')
    .description('credit a wallet (or a partner float) from the platform settlement account')
    .option('--user-id <id>', 'user id')
    .option('--merchant-id <id>', 'merchant id')
    .option('--partner-id <id>', 'partner id')
    .requiredOption('--amount <amount>', 'decimal amount, e.g. 25.00')
    .requiredOption('--currency <currency>', 'USD, KHR or USDT')
    .requiredOption('--reference <reference>', 'idempotency key: the same reference never credits twice')
    .option('--json', 'print one JSON object')
    .action(
      action<OwnerOptions & { amount: string; currency: string; reference: string; json?: boolean }>(async (clients, options) => {
        const result = await clients.admin.creditWallet({
          owner: owner(options),
          amount: options.amount,
          currency: options.currency,
          reference: options.reference,
        });
        return { transaction_ref: result.transactionRef, balance: result.balance, currency: result.currency };
      }),
    );
  wallet
    .command('balance')
    .description('list the wallets of a user or merchant, or the float of a partner')
    .option('--user-id <id>', 'user id')
    .option('--merchant-id <id>', 'merchant id')
    .option('--partner-id <id>', 'partner id')
    .option('--json', 'print one JSON object')
    .action(
      action<OwnerOptions & { json?: boolean }>(async (clients, options) => {
        const result = await clients.admin.getWalletBalances({ owner: owner(options) });
        return {
          wallets: result.wallets.map(walletJson),
        };
      }),
    );

  const ledger = admin.command('ledger').description('ledger operations');
  ledger
    .command('check')
    .description('run the ledger invariant check (exits 1 when it fails)')
    .option('--json', 'print one JSON object')
    .action(
      action<{ json?: boolean }>(async (clients) => {
        const result = await clients.admin.checkLedger({});
        if (!result.ok) {
          process.stderr.write(`error: ledger check failed: ${oneLine(result.imbalances.join('; '))}\n`);
          process.exitCode = 1;
        }
        return { ok: result.ok, accounts: result.accounts, entries: result.entries, imbalances: result.imbalances };
      }),
    );

  const credentials = admin.command('credentials').description('service credentials of the internal RPC');
  credentials
    .command('create')
    .description('create a service credential; prints its token once')
    .requiredOption(
      '--scope <scope...>',
      'admin (operators), mint (CreditWallet), credentials (credentials, key rotation), ledger-write (LedgerService writes), facade (the REST façade), partner:<id> or merchant:<id> (acts for that existing owner only)',
    )
    .requiredOption('--name <name>', 'who holds it, e.g. "facade eu-1"')
    .option('--json', 'print one JSON object')
    .action(
      action<{ scope: string[]; name: string; json?: boolean }>(async (clients, options) => {
        const result = await clients.admin.createServiceCredential({ name: options.name, scopes: options.scope });
        return { credential_id: result.credentialId, token: result.token, scopes: result.scopes };
      }),
    );
  credentials
    .command('revoke')
    .description('revoke a service credential (refused on the next call in every process)')
    .requiredOption('--credential-id <id>', 'credential id (cred_…)')
    .option('--json', 'print one JSON object')
    .action(
      action<{ credentialId: string; json?: boolean }>(async (clients, options) => {
        await clients.admin.revokeServiceCredential({ credentialId: options.credentialId });
        return { credential_id: options.credentialId, revoked: true };
      }),
    );
  credentials
    .command('list')
    .description('list service credentials (never their tokens)')
    .option('--json', 'print one JSON object')
    .action(
      action<{ json?: boolean }>(async (clients) => {
        const result = await clients.admin.listServiceCredentials({});
        return {
          credentials: result.credentials.map((item) => ({
            credential_id: item.credentialId,
            name: item.name,
            scopes: item.scopes,
            created_at: item.createdAt,
            revoked_at: item.revokedAt || null,
          })),
        };
      }),
    );

  admin
    .command('reconcile')
    .description('find and repair what faults left inconsistent between records, flows and the ledger (exits 1 when anything is left)')
    .option('--report-only', 'list the findings, change nothing')
    .option('--grace-seconds <seconds>', 'records younger than this are in flight (default RECONCILE_GRACE_SECONDS)')
    .option('--json', 'print one JSON object')
    .action(
      action<{ reportOnly?: boolean; graceSeconds?: string; json?: boolean }>(async (clients, options) => {
        const result = await clients.admin.reconcile({ reportOnly: Boolean(options.reportOnly), graceSeconds: Number(options.graceSeconds ?? 0) });
        if (result.reported > 0) process.exitCode = 1;
        return {
          started_at: result.startedAt,
          repaired: result.repaired,
          reported: result.reported,
          idempotency_keys_purged: result.idempotencyKeysPurged,
          events_purged: result.eventsPurged,
          findings: result.findings.map((finding) => ({ kind: finding.kind, id: finding.id, action: finding.action, detail: finding.detail })),
        };
      }),
    );

  const audit = admin.command('audit').description('the audit trail of privileged calls and owner-bound credentials');
  audit
    .command('list')
    .description('list audit records, newest first')
    .option('--limit <n>', 'most records, 1 to 1000', '100')
    .option('--credential-id <id>', "only this credential's calls (cred_…)")
    .option('--procedure <procedure>', 'only this procedure (e.g. CreditWallet or payments.admin.v1.AdminService/CreditWallet)')
    .option('--json', 'print one JSON object')
    .action(
      action<{ limit: string; credentialId?: string; procedure?: string; json?: boolean }>(async (clients, options) => {
        const limit = Number(options.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new CliError('error: --limit must be an integer from 1 to 1000');
        const result = await clients.admin.listAuditRecords({ limit, credentialId: options.credentialId ?? '', procedure: options.procedure ?? '' });
        return {
          records: result.records.map((record) => ({
            id: record.id,
            at: record.at,
            credential_id: record.credentialId,
            caller_address: record.callerAddress,
            client_address: record.clientAddress || null,
            procedure: record.procedure,
            arguments: JSON.parse(record.argumentsJson) as unknown,
            outcome: record.outcome,
          })),
        };
      }),
    );

  const keys = admin.command('keys').description('platform keys');
  keys
    .command('rotate')
    .description('add a data key, make it current and re-seal every secret at rest under it (idempotent)')
    .option('--reseal-only', 're-seal under the current key without adding one (after processes restarted)')
    .option('--json', 'print one JSON object')
    .action(
      action<{ resealOnly?: boolean; json?: boolean }>(async (clients, options) => {
        const result = await clients.admin.rotateDataKey({ resealOnly: Boolean(options.resealOnly) });
        return { key_id: result.keyId, merchants_resealed: result.merchantsResealed, instruments_resealed: result.instrumentsResealed };
      }),
    );
}
