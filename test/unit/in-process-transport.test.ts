/**
 * The in-process transport keeps what a network call gives a service and its caller: copies of the messages as
 * decoding makes them (strings the wire re-encodes included), the caller's headers, errors as code and ErrorDetail,
 * the call's deadline and the caller's cancel.
 */
import { Code, ConnectError, createClient, type ConnectRouter, type HandlerContext } from '@connectrpc/connect';
import { reasonError } from '../../src/errors';
import { PAYIN_REASONS } from '../../src/flows/payin/contract';
import { PayinService, type GetPayinStatusRequest } from '../../src/gen/payments/payin/v1/payin_pb';
import { createLogger } from '../../src/logger';
import { readRpcFailure } from '../../src/rpc/errors';
import { createInProcessTransport } from '../../src/rpc/server';

type StatusHandler = (request: GetPayinStatusRequest, context: HandlerContext) => Promise<{ payin: { outTradeNo: string; amountUnits: bigint } }>;

/** A PayinService client whose getPayinStatus runs `handler` in this process (the other methods are Unimplemented). */
function clientServing(handler: StatusHandler) {
  const routes = (router: ConnectRouter) => {
    router.service(PayinService, { getPayinStatus: handler });
  };
  return createClient(PayinService, createInProcessTransport(routes, createLogger('silent')));
}

describe('in-process transport', () => {
  it('hands the service a string the wire re-encodes (a lone surrogate) as U+FFFD, as a network call does', async () => {
    let seen = '';
    const client = clientServing(async (request) => {
      seen = request.outTradeNo;
      return { payin: { outTradeNo: request.outTradeNo, amountUnits: 1n } };
    });
    const answer = await client.getPayinStatus({ apiKey: 'key', outTradeNo: 'A\ud800B' });
    expect(seen).toBe('A\ufffdB');
    expect(answer.payin?.outTradeNo).toBe('A\ufffdB');
  });

  it('gives the service a copy of the request and the caller a copy of the response', async () => {
    const kept = { outTradeNo: 'KEPT', amountUnits: 5n };
    const client = clientServing(async (request) => {
      request.outTradeNo = 'CHANGED BY THE SERVICE';
      return { payin: kept };
    });
    const request = { apiKey: 'key', outTradeNo: 'ORDER-1' };
    const answer = await client.getPayinStatus(request);
    expect(request.outTradeNo).toBe('ORDER-1');
    answer.payin!.outTradeNo = 'CHANGED BY THE CALLER';
    expect(kept.outTradeNo).toBe('KEPT');
    expect(answer.payin!.amountUnits).toBe(5n);
  });

  it("passes the caller's headers and answers a domain error as its code and ErrorDetail", async () => {
    const client = clientServing(async (_request, context) => {
      throw reasonError(PAYIN_REASONS, 'PAYIN_NOT_FOUND', `no payin for ${context.requestHeader.get('x-client-address')}`);
    });
    const failure = await client.getPayinStatus({ apiKey: 'key', outTradeNo: 'X' }, { headers: { 'X-Client-Address': '192.0.2.7' } }).catch(readRpcFailure);
    expect(failure).toMatchObject({ code: Code.NotFound, reason: 'PAYIN_NOT_FOUND', message: 'no payin for 192.0.2.7' });
  });

  it('hides an unexpected error of the service behind Internal', async () => {
    const client = clientServing(async () => {
      throw new Error('database password is hunter2');
    });
    const failure = await client.getPayinStatus({ apiKey: 'key', outTradeNo: 'X' }).catch(readRpcFailure);
    expect(failure).toMatchObject({ code: Code.Internal, reason: 'INTERNAL', message: 'internal error' });
  });

  it('ends a call that outlives its deadline with DeadlineExceeded and aborts the service’s signal', async () => {
    let serviceSignal: AbortSignal | undefined;
    const client = clientServing(async (_request, context) => {
      serviceSignal = context.signal;
      return new Promise(() => undefined); // never answers
    });
    const started = Date.now();
    const error = await client.getPayinStatus({ apiKey: 'key', outTradeNo: 'X' }, { timeoutMs: 50 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.DeadlineExceeded);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    expect(serviceSignal?.aborted).toBe(true);
  });

  it("ends the call with Canceled when the caller aborts, and tells the service through its signal once it is over", async () => {
    const controller = new AbortController();
    let serviceSignal: AbortSignal | undefined;
    const client = clientServing(async (_request, context) => {
      serviceSignal = context.signal;
      expect(context.signal.aborted).toBe(false);
      return new Promise(() => undefined);
    });
    const call = client.getPayinStatus({ apiKey: 'key', outTradeNo: 'X' }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 10);
    const error = await call.catch((caught: unknown) => caught);
    expect((error as ConnectError).code).toBe(Code.Canceled);
    expect(serviceSignal?.aborted).toBe(true);
  });

  it('answers a method the routes do not serve with Unimplemented', async () => {
    const client = clientServing(async () => ({ payin: { outTradeNo: '', amountUnits: 0n } }));
    const error = await client.getBalances({ apiKey: 'key' }).catch((caught: unknown) => caught);
    expect((error as ConnectError).code).toBe(Code.Unimplemented);
  });
});
