/**
 * AdminService (platform decisions §2): onboarding and operator actions behind the `payments admin`
 * CLI. Translates between proto messages and the onboarding functions; money moves only through the ledger.
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { COMMON_REASONS, invalidFields, reasonError } from '../errors';
import { MerchantStatus, type AdminService, type WalletOwner } from '../gen/payments/admin/v1/admin_pb';
import type { Account, AccountOwnerType } from '../ledger/types';
import { CURRENCIES, decimalsOf, formatAmount, isCurrency, parseAmount, type Currency } from '../money';
import { resealAll, rotateDataKey } from './key-registry';
import { reconcileNow } from '../flows/reconciliation/service';
import { createReconciliationRepairs } from '../activities';
import type { PlatformDeps } from '../platform-deps';
import { callerOf } from '../rpc/caller';
import { createServiceCredential, CredentialInputError, listServiceCredentials, revokeServiceCredential } from '../service-credentials';
import { notFound } from '../onboarding/common';
import { ONBOARDING_REASONS } from '../onboarding/reasons';
import { createMerchant, getMerchant, listMerchants, setMerchantStatus, type Merchant } from '../onboarding/merchants';
import { createPartner, getPartner, setPartnerStatus } from '../onboarding/partners';
import { createUser, getUser } from '../onboarding/users';
import { checkPolicyChange, findOutcomePolicy, outcomePolicyFields, saveOutcomePolicy, type OutcomePolicyRow } from '../flows/payin/policy';

interface ResolvedOwner {
  owner_type: AccountOwnerType;
  owner_id: string;
  /** The kind of account that holds this owner's money. */
  kind: 'wallet' | 'partner_float';
}

/**
 * Exactly one of user_id, merchant_id, partner_id must be set, and name an existing record.
 * @throws DomainError invalid_argument on owner; not_found USER_NOT_FOUND | MERCHANT_NOT_FOUND | PARTNER_NOT_FOUND
 */
async function resolveOwner(deps: PlatformDeps, owner: WalletOwner | undefined): Promise<ResolvedOwner> {
  const given = [owner?.userId, owner?.merchantId, owner?.partnerId].filter((value) => value);
  if (given.length !== 1) throw invalidFields({ owner: ['exactly one of user_id, merchant_id and partner_id is required'] });
  if (owner!.userId) {
    const user = await getUser(deps.database, owner!.userId);
    if (!user) throw notFound('USER_NOT_FOUND', 'user');
    return { owner_type: 'user', owner_id: user.id, kind: 'wallet' };
  }
  if (owner!.merchantId) {
    const merchant = await getMerchant(deps.database, owner!.merchantId);
    if (!merchant) throw notFound('MERCHANT_NOT_FOUND', 'merchant');
    return { owner_type: 'merchant', owner_id: merchant.id, kind: 'wallet' };
  }
  const partner = await getPartner(deps.database, owner!.partnerId);
  if (!partner) throw notFound('PARTNER_NOT_FOUND', 'partner');
  return { owner_type: 'partner', owner_id: partner.id, kind: 'partner_float' };
}

function requireCurrency(text: string): Currency {
  const currency = text.trim().toUpperCase();
  if (!isCurrency(currency)) throw invalidFields({ currency: [`currency must be one of ${CURRENCIES.join(', ')}`] }, ONBOARDING_REASONS, 'INVALID_CURRENCY');
  return currency;
}

/** What an operator sees of a merchant: no key, password or secret (the public key stays out too: it is long). */
function merchantRecord(merchant: Merchant) {
  return {
    merchantId: merchant.id,
    name: merchant.name,
    status: merchant.status,
    callbackUrl: merchant.callback_url,
    signatureHeader: merchant.signature_header,
    payinFeePercent: merchant.payin_fee_percent,
    apiUserName: merchant.api_user_name,
    createdAt: merchant.created_at.toISOString(),
  };
}

/** A page of ListMerchants when the request names no limit. */
const DEFAULT_MERCHANT_PAGE = 100;

function walletBalance(account: Account) {
  return {
    currency: account.currency,
    balance: formatAmount(account.posted_units, account.currency),
    balanceUnits: account.posted_units,
    decimals: decimalsOf(account.currency),
    availableUnits: account.available_units,
    available: formatAmount(account.available_units, account.currency),
    heldUnits: account.held_units,
    kind: account.kind,
    accountId: account.id,
  };
}

/** The id of the credential that made this call (its audit record and ledger metadata name it). */
function credentialOf(context: HandlerContext): string {
  return callerOf(context)?.id ?? 'unknown';
}

/** A merchant's outcome policy as the RPC answers it (the default, `stored` false, without a row). */
function outcomePolicyMessage(merchant_id: string, row: OutcomePolicyRow | undefined) {
  return { merchantId: merchant_id, ...outcomePolicyFields(row) };
}

/** Most audit records one call answers, and the default. */
const MAX_AUDIT_RECORDS = 1000;
const DEFAULT_AUDIT_RECORDS = 100;

/** Idempotency key of an operator credit: the CLI's `--reference`, namespaced. */
export function adminCreditIdempotencyKey(reference: string): string {
  return `admin:wallet-credit:${reference}`;
}

export function createAdminService(deps: PlatformDeps): ServiceImpl<typeof AdminService> {
  const repairs = createReconciliationRepairs(deps);
  return {
    /** @throws DomainError PERMISSION_DENIED for a funded float without the mint scope (it mints money) */
    async createPartner(request, context) {
      const floatUnits = request.floatAmount
        ? parseAmount(request.floatAmount, 'USD', { allowZero: true, field: 'float_amount' })
        : undefined;
      if (floatUnits && !callerOf(context)?.scopes.includes('mint')) {
        throw reasonError(COMMON_REASONS, 'PERMISSION_DENIED', 'a funded float needs the mint scope', { float_amount: ['needs the mint scope'] });
      }
      const { partner, credentials } = await createPartner(deps, {
        name: request.name,
        public_key_pem: request.publicKeyPem,
        float_units: floatUnits,
        credential_id: credentialOf(context),
      });
      return {
        partnerId: credentials.partner_id,
        partnerSecretKey: credentials.partner_secret_key,
        userName: credentials.user_name,
        password: credentials.password,
        platformPublicKey: deps.keys.publicKeyPem,
        floatAccountId: partner.float_account_id,
        fieldEncryptionPublicKey: deps.keys.fieldEncryption.publicKeyPem,
      };
    },

    async createMerchant(request) {
      const { credentials } = await createMerchant(deps, {
        name: request.name,
        callback_url: request.callbackUrl,
        signature_header: request.signatureHeader || undefined,
        public_key_pem: request.publicKeyPem || undefined,
        payin_fee_percent: request.payinFeePercent || undefined,
      });
      return {
        merchantId: credentials.merchant_id,
        merchantSecretKey: credentials.merchant_secret_key,
        apiUserName: credentials.api_user_name,
        apiPassword: credentials.api_password,
        apiKey: credentials.api_key,
        hmacSecret: credentials.hmac_secret,
        signatureHeader: credentials.signature_header,
        platformPublicKey: credentials.platform_public_key,
        fieldEncryptionPublicKey: credentials.field_encryption_public_key,
        privateKey: credentials.private_key,
      };
    },

    async setMerchantStatus(request) {
      const status = request.status === MerchantStatus.SUSPENDED ? 'suspended' : 'active';
      const merchant = await deps.database.transaction(async (trx) => {
        const changed = await setMerchantStatus(trx, request.merchantId, status);
        await deps.authChanges.publish(trx, { merchant_id: changed.id });
        return changed;
      });
      return { merchantId: merchant.id, status: merchant.status };
    },

    async setPartnerStatus(request) {
      const status = request.status === MerchantStatus.SUSPENDED ? 'suspended' : 'active';
      const partner = await deps.database.transaction(async (trx) => {
        const changed = await setPartnerStatus(trx, request.partnerId, status);
        await deps.authChanges.publish(trx, { partner_id: changed.id });
        return changed;
      });
      deps.logger.info({ partner_id: partner.id, status: partner.status }, 'partner status changed');
      return { partnerId: partner.id, status: partner.status };
    },

    async createUser(request) {
      const user = await createUser(deps, {
        phone_number: request.phoneNumber || undefined,
        email: request.email || undefined,
        first_name: request.firstName,
        last_name: request.lastName,
        address: request.address || undefined,
        currency: (request.currency.trim().toUpperCase() || 'USD') as Currency,
        merchant_id: request.merchantId || undefined,
        eligible: !request.notEligible,
      });
      return {
        userId: user.id,
        phoneNumber: user.phone_number ?? '',
        userToken: user.user_token,
        walletRef: user.wallet_ref,
        email: user.email ?? '',
        currency: user.currency,
        walletAccountId: user.wallet_account_id,
        eligible: user.eligible,
      };
    },

    /** Scope mint (src/rpc/auth.ts). The ledger transaction's metadata names the credential that minted it. */
    async creditWallet(request, context) {
      const currency = requireCurrency(request.currency);
      const units = parseAmount(request.amount.trim(), currency);
      const owner = await resolveOwner(deps, request.owner);
      const account = await deps.ledger.findAccount({ ...owner, currency });
      if (!account) throw reasonError(ONBOARDING_REASONS, 'WALLET_NOT_FOUND', `no ${currency} ${owner.kind.replace('_', ' ')} for this ${owner.owner_type}`);
      const transaction = await deps.ledger.transfer({
        idempotency_key: adminCreditIdempotencyKey(request.reference),
        description: `admin credit ${request.reference}`,
        postings: [
          { platform: 'settlement', currency, amount_units: -units },
          { account_id: account.id, amount_units: units },
        ],
        metadata: { source: 'admin', reference: request.reference, owner_type: owner.owner_type, owner_id: owner.owner_id, credential_id: credentialOf(context) },
      });
      const after = await deps.ledger.getAccount(account.id);
      return {
        transactionRef: transaction.id,
        balance: formatAmount(after.posted_units, currency),
        balanceUnits: after.posted_units,
        currency,
      };
    },

    async getWalletBalances(request) {
      const owner = await resolveOwner(deps, request.owner);
      const accounts = (await deps.ledger.accountsOf(owner.owner_type, owner.owner_id)).filter((account) => account.kind === owner.kind);
      accounts.sort((a, b) => CURRENCIES.indexOf(a.currency) - CURRENCIES.indexOf(b.currency));
      return { wallets: accounts.map(walletBalance) };
    },

    async checkLedger() {
      const check = await deps.ledger.check();
      return { ok: check.ok, accounts: BigInt(check.accounts), entries: BigInt(check.entries), imbalances: check.imbalances };
    },

    /**
     * @throws DomainError invalid_argument on scopes (each a fixed scope, or partner:<id> / merchant:<id> naming an
     *   existing owner) or name
     */
    async createServiceCredential(request, context) {
      let created;
      try {
        created = await createServiceCredential(deps.database, { name: request.name, scopes: request.scopes });
      } catch (error) {
        if (error instanceof CredentialInputError) throw invalidFields({ [error.field]: [error.message] });
        throw error;
      }
      deps.logger.info({ credential: created.id, scopes: created.scopes, by: credentialOf(context) }, 'service credential created');
      return { credentialId: created.id, token: created.token, scopes: created.scopes };
    },

    /** @throws DomainError not_found CREDENTIAL_NOT_FOUND (unknown or already revoked) */
    async revokeServiceCredential(request) {
      if (!(await revokeServiceCredential(deps.database, deps.authChanges, request.credentialId))) throw notFound('CREDENTIAL_NOT_FOUND', 'credential');
      deps.logger.info({ credential: request.credentialId }, 'service credential revoked');
      return {};
    },

    /** Data key rotation (docs/operations.md "Keys"); the key directory is this process's PLATFORM_KEY_DIR. */
    async rotateDataKey(request) {
      const report = request.resealOnly
        ? { key_id: deps.keys.dataKeys.currentId, resealed: await resealAll(deps.database, deps.keys.dataKeys) }
        : await rotateDataKey(deps.database, deps.config.PLATFORM_KEY_DIR);
      // This process seals under the new key from now on (the others within seconds).
      deps.keys.dataKeys.lookup?.(report.key_id);
      deps.logger.info({ key_id: report.key_id, resealed: report.resealed }, 'data key rotation');
      return {
        keyId: report.key_id,
        merchantsResealed: BigInt(report.resealed.merchants ?? 0),
        instrumentsResealed: BigInt(report.resealed.instruments ?? 0),
      };
    },

    async reconcile(request) {
      const report = await reconcileNow(deps, repairs, { repair: !request.reportOnly, grace_seconds: request.graceSeconds || undefined });
      return {
        startedAt: report.started_at,
        findings: report.findings,
        repaired: report.repaired,
        reported: report.reported,
        idempotencyKeysPurged: report.idempotency_keys_purged,
        eventsPurged: report.events_purged,
      };
    },

    async listAuditRecords(request) {
      const limit = Math.min(request.limit || DEFAULT_AUDIT_RECORDS, MAX_AUDIT_RECORDS);
      const query = deps.database('audit_records').orderBy('id', 'desc').limit(limit);
      if (request.credentialId) query.where({ credential_id: request.credentialId });
      if (request.procedure) {
        if (request.procedure.includes('/')) query.where({ procedure: request.procedure });
        else query.where('procedure', 'like', `%/${request.procedure.replace(/[\\%_]/g, (character) => `\\${character}`)}`);
      }
      const rows = (await query) as Array<{ id: string | bigint; at: Date; credential_id: string; caller_address: string; client_address: string | null; procedure: string; arguments: unknown; outcome: string }>;
      return {
        records: rows.map((row) => ({
          id: BigInt(row.id),
          at: row.at.toISOString(),
          credentialId: row.credential_id,
          callerAddress: row.caller_address,
          clientAddress: row.client_address ?? '',
          procedure: row.procedure,
          argumentsJson: JSON.stringify(row.arguments),
          outcome: row.outcome,
        })),
      };
    },

    /** Newest first, `limit` 0 = 100 (at most 500; the request's rule refuses more), never a secret. */
    async listMerchants(request) {
      const merchants = await listMerchants(deps.database, {
        limit: request.limit || DEFAULT_MERCHANT_PAGE,
        ...(request.status ? { status: request.status as Merchant['status'] } : {}),
        ...(request.beforeMerchantId ? { before_merchant_id: request.beforeMerchantId } : {}),
      });
      return { merchants: merchants.map(merchantRecord) };
    },

    /** The merchant and its wallets (posted, available and held, per currency). @throws DomainError MERCHANT_NOT_FOUND */
    async getMerchant(request) {
      const merchant = await getMerchant(deps.database, request.merchantId);
      if (!merchant) throw notFound('MERCHANT_NOT_FOUND', 'merchant');
      const accounts = (await deps.ledger.accountsOf('merchant', merchant.id)).filter((account) => account.kind === 'wallet');
      accounts.sort((a, b) => CURRENCIES.indexOf(a.currency) - CURRENCIES.indexOf(b.currency));
      return { merchant: merchantRecord(merchant), wallets: accounts.map(walletBalance) };
    },

    /** @throws DomainError MERCHANT_NOT_FOUND */
    async getMerchantOutcomePolicy(request) {
      const merchant = await getMerchant(deps.database, request.merchantId);
      if (!merchant) throw notFound('MERCHANT_NOT_FOUND', 'merchant');
      return { policy: outcomePolicyMessage(merchant.id, await findOutcomePolicy(deps.database, merchant.id)) };
    },

    /**
     * Audited (src/rpc/audit.ts). Changes only the fields given; `updated_by` is the calling credential.
     * @throws DomainError VALIDATION_FAILED (underpaid, overpaid, late, tolerance_percent, refund_fee), MERCHANT_NOT_FOUND;
     *   nothing is changed for either
     */
    async setMerchantOutcomePolicy(request, context) {
      const change = checkPolicyChange({
        underpaid: request.underpaid,
        overpaid: request.overpaid,
        late: request.late,
        tolerance_percent: request.tolerancePercent,
        refund_fee: request.refundFee,
      });
      const merchant = await getMerchant(deps.database, request.merchantId);
      if (!merchant) throw notFound('MERCHANT_NOT_FOUND', 'merchant');
      const row = await saveOutcomePolicy(deps.database, merchant.id, change, credentialOf(context));
      deps.logger.info({ merchant_id: merchant.id, policy: change, by: credentialOf(context) }, 'merchant outcome policy set');
      return { policy: outcomePolicyMessage(merchant.id, row) };
    },

    async listServiceCredentials() {
      const credentials = await listServiceCredentials(deps.database);
      return {
        credentials: credentials.map((credential) => ({
          credentialId: credential.id,
          name: credential.name,
          scopes: credential.scopes,
          createdAt: credential.created_at,
          revokedAt: credential.revoked_at ?? '',
        })),
      };
    },
  };
}
