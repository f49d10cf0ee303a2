/**
 * The dashboard's pages behind sign-in, in navigation order: each entry is one navigation link, one GET route
 * (`/dashboard<path>`, registered by ./router.ts) and the function that reads its facts from DashboardService and
 * renders its content (rest-facade/views/dashboard.ts). A page is added by adding one entry here (and its view and
 * its route in docs/openapi.yaml); the first entry is where sign-in lands.
 */
import type { Session } from '../../src/gen/payments/dashboard/v1/dashboard_pb';
import type { FacadeContext } from '../context';
import { invalidFields } from '../../src/errors';
import { problem } from '../../src/field-problems';
import { toConnectError } from '../../src/rpc/errors';
import { rpcCallOptions } from '../rpc-call';
import { balancesContent, deliveriesContent, endpointContent, type NavigationEntry } from '../views/dashboard';
import { eventsContent, PAYMENT_FILTER_NAMES, paymentsContent } from '../views/dashboard-lists';
import type { SafeHtml } from '../views/html';
import { policyContent, POLICY_PATH } from '../views/dashboard-policy';
import { payoutsContent, PAYOUTS_PATH } from '../views/dashboard-payouts';
import { randomUUID } from 'node:crypto';

export interface DashboardPage extends NavigationEntry {
  /** Reads the page's facts for the session of `sessionToken` and renders its main content. @throws the RPC's error */
  render(ctx: FacadeContext, sessionToken: string, session: Session): Promise<SafeHtml>;
}

/** A query parameter as a short text ('' when absent, repeated or longer than `max`). */
export function queryText(ctx: FacadeContext, name: string, max = 128): string {
  const value = ctx.query[name];
  return typeof value === 'string' && value.length <= max ? value : '';
}

/** Longest query value passed on (the service names what is wrong with shorter ones). */
const MAX_QUERY_VALUE = 256;
const PAGE_SIZE = /^\d{1,3}$/;

/**
 * A list page's query parameters `names`, each as its text ('' when absent). A parameter given twice, or longer than
 * any valid value, is named with `invalid` (`max_length` for the longer), and `page_size` must be a whole number; the
 * rest is the service's to check.
 * @throws ConnectError VALIDATION_FAILED naming each such parameter (answered as the 400 page, like the service's)
 */
export function listQuery(ctx: FacadeContext, names: readonly string[]): { filters: Record<string, string>; pageSize: number } {
  const filters: Record<string, string> = {};
  const problems: Record<string, string[]> = {};
  for (const name of [...names, 'page_size']) {
    const value = ctx.query[name];
    if (Array.isArray(value)) problems[name] = [problem('invalid')];
    else if (typeof value === 'string' && value.length > MAX_QUERY_VALUE) problems[name] = [problem('max_length', MAX_QUERY_VALUE)];
    else filters[name] = value ?? '';
  }
  const pageSize = filters.page_size ?? '';
  if (pageSize !== '' && !PAGE_SIZE.test(pageSize)) problems.page_size = [problem('integer')];
  if (Object.keys(problems).length > 0) throw toConnectError(invalidFields(problems));
  return { filters, pageSize: pageSize === '' ? 0 : Number(pageSize) };
}

const PAYMENT_FILTERS = [...PAYMENT_FILTER_NAMES, 'before', 'after'] as const;
const EVENT_FILTERS = ['type', 'subject', 'before'] as const;

/** The payments list's filters as DashboardService takes them (the page's and the CSV export's). */
export function paymentsRequestOf(filters: Record<string, string>) {
  return {
    kind: filters.kind ?? '',
    status: filters.status ?? '',
    reference: filters.reference ?? '',
    outTradeNo: filters.out_trade_no ?? '',
    amountFrom: filters.amount_from ?? '',
    amountTo: filters.amount_to ?? '',
    createdFrom: filters.created_from ?? '',
    createdTo: filters.created_to ?? '',
  };
}

export const DASHBOARD_PAGES: readonly DashboardPage[] = [
  {
    path: '/balances',
    title: 'Balances',
    async render(ctx, sessionToken) {
      const { wallets } = await ctx.state.clients.dashboard.getBalances({ sessionToken }, rpcCallOptions(ctx));
      return balancesContent(wallets);
    },
  },
  {
    path: '/payments',
    title: 'Payments',
    async render(ctx, sessionToken) {
      const { filters, pageSize } = listQuery(ctx, PAYMENT_FILTERS);
      const answer = await ctx.state.clients.dashboard.listPayments(
        {
          sessionToken,
          ...paymentsRequestOf(filters),
          before: filters.before,
          after: filters.after,
          pageSize,
        },
        rpcCallOptions(ctx),
      );
      const { before: _before, after: _after, ...kept } = filters;
      return paymentsContent({ payments: answer.payments, kinds: answer.kinds, statuses: answer.statuses, filters: kept, nextBefore: answer.nextBefore, newerAfter: answer.newerAfter });
    },
  },
  {
    path: PAYOUTS_PATH,
    title: 'Payouts',
    async render(ctx, sessionToken, session) {
      const { payouts, payoutFee, payoutFeeCurrency, schedule } = await ctx.state.clients.dashboard.listPayouts({ sessionToken }, rpcCallOptions(ctx));
      const requested = queryText(ctx, 'requested', 64);
      const decided = queryText(ctx, 'decided', 64);
      const scheduled = queryText(ctx, 'schedule', 16);
      const notice = scheduled
        ? scheduled === 'off'
          ? 'Automatic payouts are off.'
          : 'Automatic payouts saved.'
        : requested
        ? `Payout ${requested} requested: the amount and its fee are held on your balance until the provider sends it (or until it is approved, if it waits for approval).`
        : decided
          ? `Payout ${decided} ${queryText(ctx, 'decision', 16) === 'approve' ? 'approved: it is sent now' : 'rejected: the held amount is back on your balance'}.`
          : undefined;
      return payoutsContent({ payouts, fee: payoutFee, feeCurrency: payoutFeeCurrency, csrfToken: session.csrfToken, formKey: randomUUID(), notice, ...(schedule ? { schedule } : {}) });
    },
  },
  {
    path: '/events',
    title: 'Events',
    async render(ctx, sessionToken) {
      const { filters, pageSize } = listQuery(ctx, EVENT_FILTERS);
      const answer = await ctx.state.clients.dashboard.listEvents(
        { sessionToken, type: filters.type, subject: filters.subject, before: filters.before, newestFirst: true, pageSize },
        rpcCallOptions(ctx),
      );
      return eventsContent({ events: answer.events, types: answer.types, filters, nextBefore: answer.nextBefore });
    },
  },
  {
    path: '/webhooks',
    title: 'Webhook deliveries',
    label: 'Webhooks',
    async render(ctx, sessionToken, session) {
      const pageToken = queryText(ctx, 'page_token');
      const status = queryText(ctx, 'status', 32);
      const answer = await ctx.state.clients.dashboard.listWebhookDeliveries({ sessionToken, pageToken, status }, rpcCallOptions(ctx));
      const endpoint = await ctx.state.clients.dashboard.getWebhookEndpoint({ sessionToken }, rpcCallOptions(ctx));
      return deliveriesContent({
        status,
        disabledAt: endpoint.disabledAt,
        deliveries: answer.deliveries,
        csrfToken: session.csrfToken,
        nextPageToken: answer.nextPageToken,
        paged: pageToken !== '',
        redelivered: queryText(ctx, 'redelivered') || undefined,
      });
    },
  },
  {
    path: '/webhook-endpoint',
    title: 'Webhook endpoint',
    label: 'Endpoint',
    async render(ctx, sessionToken, session) {
      const notice = { changed: 'The callback URL was changed: new webhooks go there.', enabled: 'The endpoint is enabled again: webhooks are sent to it.' }[queryText(ctx, 'done')];
      return endpointContent(await ctx.state.clients.dashboard.getWebhookEndpoint({ sessionToken }, rpcCallOptions(ctx)), session.csrfToken, { notice });
    },
  },
  {
    path: POLICY_PATH,
    title: 'Payment policy',
    label: 'Policy',
    async render(ctx, sessionToken, session) {
      const { policy } = await ctx.state.clients.dashboard.getOutcomePolicy({ sessionToken }, rpcCallOptions(ctx));
      return policyContent({ policy: policy!, csrfToken: session.csrfToken, saved: queryText(ctx, 'saved') === '1' });
    },
  },
];
