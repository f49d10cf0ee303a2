/**
 * The ordered list of migrations, imported statically so that tsx, jest and compiled code all load the same
 * files. Add a migration by adding a file and one line here; never edit an applied one.
 */
import type { Knex } from 'knex';
import * as foundation from './001_foundation';
import * as ledger from './002_ledger';
import * as onboarding from './003_onboarding';
import * as transfers from './004_transfers';
import * as payins from './005_payins';
import * as wallet from './006_wallet';
import * as instruments from './007_instruments';
import * as instrumentVault from './008_instruments';
import * as deposits from './009_deposits';
import * as payinOutbox from './010_payin_outbox';
import * as idempotencyKeys from './016_idempotency_keys';
import * as webhookSubjects from './017_webhook_subjects';
import * as serviceCredentials from './020_service_credentials';
import * as payinForwarding from './021_payin_forwarding';
import * as rateLimits from './022_rate_limits';
import * as dataKeys from './023_data_keys';
import * as preTransferStarted from './024_pre_transfer_started';
import * as auditAndConfirmations from './025_audit_and_confirmations';
import * as temporalAuthority from './026_temporal_authority';
import * as merchantLoginRequests from './027_merchant_login_requests';
import * as ledgerBalanceAfter from './029_ledger_balance_after';
import * as dashboardSessions from './030_dashboard_sessions';
import * as events from './031_events';
import * as businessKeysAndOrderedWebhooks from './032_business_keys_and_ordered_webhooks';
import * as paymentRequests from './033_payment_requests';
import * as requestJournalOwners from './042_request_journal_owners';
import * as auditAppendFunction from './043_audit_append_function';
import * as eventsNumberedAfterCommit from './048_events_numbered_after_commit';
import * as eventsNumberedIndexes from './070_events_numbered_indexes';
import * as webhookEndpointManagement from './053_webhook_endpoint_management';
import * as merchantListIndex from './060_merchant_list_index';
import * as payinOutboxTraceparent from './061_payin_outbox_traceparent';
import * as refunds from './035_refunds';
import * as depositRefunds from './036_deposit_refunds';
import * as merchantOutcomePolicies from './037_merchant_outcome_policies';
import * as payinSettlementAccounts from './038_payin_settlement_accounts';
import * as refundFee from './039_refund_fee';
import * as payouts from './065_payouts';
import * as bankPayouts from './066_bank_payouts';
import * as payoutSchedules from './067_payout_schedules';
import * as payoutLimitsPerCurrency from './072_payout_limits_per_currency';
import * as statementDeclined from './073_statement_declined';

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

const migrations: Array<[string, Migration]> = [
  ['001_foundation', foundation],
  ['002_ledger', ledger],
  ['003_onboarding', onboarding],
  ['004_transfers', transfers],
  ['005_payins', payins],
  ['006_wallet', wallet],
  ['007_instruments', instruments],
  ['008_instruments', instrumentVault],
  ['009_deposits', deposits],
  ['010_payin_outbox', payinOutbox],
  ['016_idempotency_keys', idempotencyKeys],
  ['017_webhook_subjects', webhookSubjects],
  ['020_service_credentials', serviceCredentials],
  ['021_payin_forwarding', payinForwarding],
  ['022_rate_limits', rateLimits],
  ['023_data_keys', dataKeys],
  ['024_pre_transfer_started', preTransferStarted],
  ['025_audit_and_confirmations', auditAndConfirmations],
  ['026_temporal_authority', temporalAuthority],
  ['027_merchant_login_requests', merchantLoginRequests],
  ['029_ledger_balance_after', ledgerBalanceAfter],
  ['030_dashboard_sessions', dashboardSessions],
  ['031_events', events],
  ['032_business_keys_and_ordered_webhooks', businessKeysAndOrderedWebhooks],
  ['033_payment_requests', paymentRequests],
  ['035_refunds', refunds],
  ['036_deposit_refunds', depositRefunds],
  ['037_merchant_outcome_policies', merchantOutcomePolicies],
  ['038_payin_settlement_accounts', payinSettlementAccounts],
  ['039_refund_fee', refundFee],
  ['042_request_journal_owners', requestJournalOwners],
  ['043_audit_append_function', auditAppendFunction],
  ['048_events_numbered_after_commit', eventsNumberedAfterCommit],
  ['053_webhook_endpoint_management', webhookEndpointManagement],
  ['060_merchant_list_index', merchantListIndex],
  ['061_payin_outbox_traceparent', payinOutboxTraceparent],
  ['065_payouts', payouts],
  ['066_bank_payouts', bankPayouts],
  ['067_payout_schedules', payoutSchedules],
  ['070_events_numbered_indexes', eventsNumberedIndexes],
  ['072_payout_limits_per_currency', payoutLimitsPerCurrency],
  ['073_statement_declined', statementDeclined],
];

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => migrations.map(([name]) => name),
  getMigrationName: (name) => name,
  getMigration: async (name) => {
    const found = migrations.find(([candidate]) => candidate === name);
    if (!found) throw new Error(`unknown migration ${name}`);
    return found[1];
  },
};
