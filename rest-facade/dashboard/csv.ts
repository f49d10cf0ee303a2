/**
 * The dashboard's CSV exports (docs/dashboard.md "Exports"): the filtered payments list and a wallet's balance
 * transactions, streamed page by page (keyset paging through DashboardService, 100 payments or 500 postings a call),
 * so an export of any size holds one page in memory. RFC 4180 text: a header line, CRLF line ends, every cell quoted
 * where needed; amounts in major units (the currency's decimals); a text cell that a spreadsheet would read as a
 * formula (`=`, `+`, `-`, `@`, tab, CR) starts with `'`.
 */
import { Readable } from 'node:stream';
import type { ListBalanceTransactionsResponse, ListPaymentsResponse } from '../../src/gen/payments/dashboard/v1/dashboard_pb';
import type { FacadeContext } from '../context';
import { rpcCallOptions } from '../rpc-call';
import { amount } from '../views/dashboard';
import { setSecurityHeaders } from './http';
import { paymentsRequestOf } from './pages';

const FORMULA = /^[=+\-@\t\r]/;

/** A text cell: neutralised when a spreadsheet would run it, quoted when it holds a comma, quote or line break. */
function text(value: string): string {
  const safe = FORMULA.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** A number cell (an amount in major units), never neutralised. */
const number = (value: string) => value;

const line = (cells: string[]) => `${cells.join(',')}\r\n`;

export const PAYMENTS_CSV_HEADER = ['reference', 'order_id', 'kind', 'status', 'currency', 'amount', 'fee', 'net', 'created_at', 'updated_at'];
export const BALANCE_CSV_HEADER = ['time', 'movement', 'payment_reference', 'ledger_key', 'currency', 'amount', 'balance_after'];

function paymentLines(page: ListPaymentsResponse): string {
  return page.payments
    .map((payment) =>
      line([
        text(payment.reference),
        text(payment.outTradeNo),
        text(payment.kind),
        text(payment.status),
        text(payment.currency),
        number(payment.currency ? amount(payment.amountUnits, payment.currency) : ''),
        number(payment.currency ? amount(payment.feeUnits, payment.currency) : ''),
        number(payment.currency && payment.hasNet ? amount(payment.netUnits, payment.currency) : ''),
        text(payment.createdAt),
        text(payment.updatedAt),
      ]),
    )
    .join('');
}

function balanceLines(page: ListBalanceTransactionsResponse): string {
  return page.transactions
    .map((entry) =>
      line([
        text(entry.at),
        text(entry.description),
        text(entry.paymentReference),
        text(entry.ledgerKey),
        text(page.currency),
        number(amount(entry.amountUnits, page.currency)),
        number(amount(entry.balanceAfterUnits, page.currency)),
      ]),
    )
    .join('');
}

/** Sends `pages` (the first already read, so a refused filter answered before anything was sent) as a CSV download. */
function sendCsv(ctx: FacadeContext, filename: string, pages: AsyncGenerator<string>): void {
  setSecurityHeaders(ctx);
  ctx.status = 200;
  ctx.type = 'text/csv; charset=utf-8';
  ctx.set('Content-Disposition', `attachment; filename="${filename}"`);
  const stream = Readable.from(pages);
  stream.on('error', (error) => ctx.state.logger.error({ err: error, request_id: ctx.state.requestId }, 'dashboard export cut short'));
  ctx.body = stream;
}

const PAYMENTS_PER_CALL = 100;
const POSTINGS_PER_CALL = 500;

/**
 * The filtered payments as CSV, every page. @throws the first page's RPC error (a refused filter, an ended session),
 * before anything is sent
 */
export async function exportPayments(ctx: FacadeContext, sessionToken: string, filters: Record<string, string>): Promise<void> {
  const request = { sessionToken, ...paymentsRequestOf(filters), pageSize: PAYMENTS_PER_CALL };
  const first = await ctx.state.clients.dashboard.listPayments(request, rpcCallOptions(ctx));
  async function* pages(): AsyncGenerator<string> {
    yield line(PAYMENTS_CSV_HEADER);
    let page = first;
    for (;;) {
      yield paymentLines(page);
      if (!page.nextBefore) return;
      page = await ctx.state.clients.dashboard.listPayments({ ...request, before: page.nextBefore.toString() }, rpcCallOptions(ctx));
    }
  }
  sendCsv(ctx, `payments-${new Date().toISOString().slice(0, 10)}.csv`, pages());
}

/** Every posting on one wallet as CSV, newest first. @throws the first page's RPC error, before anything is sent */
export async function exportBalanceTransactions(ctx: FacadeContext, sessionToken: string, currency: string): Promise<void> {
  const request = { sessionToken, currency, pageSize: POSTINGS_PER_CALL };
  const first = await ctx.state.clients.dashboard.listBalanceTransactions(request, rpcCallOptions(ctx));
  async function* pages(): AsyncGenerator<string> {
    yield line(BALANCE_CSV_HEADER);
    let page = first;
    for (;;) {
      yield balanceLines(page);
      if (!page.nextBefore) return;
      page = await ctx.state.clients.dashboard.listBalanceTransactions({ ...request, before: page.nextBefore }, rpcCallOptions(ctx));
    }
  }
  sendCsv(ctx, `balance-${first.currency}-${new Date().toISOString().slice(0, 10)}.csv`, pages());
}
