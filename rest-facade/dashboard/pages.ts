/**
 * The dashboard's pages behind sign-in, in navigation order: each entry is one navigation link, one GET route
 * (`/dashboard<path>`, registered by ./router.ts) and the function that reads its facts from DashboardService and
 * renders its content (rest-facade/views/dashboard.ts). A page is added by adding one entry here (and its view and
 * its route in docs/openapi.yaml); the first entry is where sign-in lands.
 */
import type { Session } from '../../src/gen/payments/dashboard/v1/dashboard_pb';
import type { FacadeContext } from '../context';
import { rpcCallOptions } from '../rpc-call';
import { balancesContent, deliveriesContent, endpointContent, type NavigationEntry } from '../views/dashboard';
import type { SafeHtml } from '../views/html';

export interface DashboardPage extends NavigationEntry {
  /** Reads the page's facts for the session of `sessionToken` and renders its main content. @throws the RPC's error */
  render(ctx: FacadeContext, sessionToken: string, session: Session): Promise<SafeHtml>;
}

/** A query parameter as a short text ('' when absent, repeated or longer than `max`). */
function queryText(ctx: FacadeContext, name: string, max = 128): string {
  const value = ctx.query[name];
  return typeof value === 'string' && value.length <= max ? value : '';
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
    path: '/webhooks',
    title: 'Webhook deliveries',
    async render(ctx, sessionToken, session) {
      const pageToken = queryText(ctx, 'page_token');
      const answer = await ctx.state.clients.dashboard.listWebhookDeliveries({ sessionToken, pageToken }, rpcCallOptions(ctx));
      return deliveriesContent({
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
    async render(ctx, sessionToken) {
      return endpointContent(await ctx.state.clients.dashboard.getWebhookEndpoint({ sessionToken }, rpcCallOptions(ctx)));
    },
  },
];
