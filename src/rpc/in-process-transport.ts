/**
 * A Connect transport to the platform services in this process (the façade when the api role runs beside it): each
 * unary call goes through the same server interceptors as a network call (trace span, metrics, error mapping,
 * request validation) and reaches the service implementation directly, without the loopback HTTP/2 hop and without
 * encoding the messages (bench `wallet`: the hop cost about a third of the façade process's CPU, and Connect's
 * in-memory HTTP emulation with binary encoding another seventh).
 *
 * What the network gives a call, this keeps: the handler sees a copy of the request message and the caller a copy
 * of the response (as decoding makes one); the call's deadline and the caller's abort end it with DeadlineExceeded
 * or Canceled even when the handler does not watch its signal; a handler's error reaches the caller as the
 * ConnectError the interceptors made of it (code, message, ErrorDetail); the caller's headers are the handler's
 * `requestHeader`; the handler's context values are its own (a fresh set, as a network server makes one).
 * The platform's services are unary only: a streaming call fails with Unimplemented.
 */
import { clone, create, fromBinary, toBinary, type DescMessage, type DescMethodUnary, type MessageShape } from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  createContextValues,
  createServiceImplSpec,
  type ConnectRouter,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from '@connectrpc/connect';

type UnarySpec = Extract<MethodImplSpec, { kind: 'unary' }>;

/** The unary implementations the routes register, by `service/method` type name. */
function collectUnaryImplementations(routes: (router: ConnectRouter) => void): Map<string, UnarySpec> {
  const specs = new Map<string, UnarySpec>();
  const collector = {
    service(service, implementation) {
      const spec = createServiceImplSpec(service, implementation);
      for (const method of Object.values(spec.methods)) {
        if (method.kind === 'unary') specs.set(`${service.typeName}/${method.method.name}`, method);
      }
      return collector;
    },
    rpc() {
      throw new Error('in-process transport: register whole services');
    },
    handlers: [],
  } as ConnectRouter;
  routes(collector);
  return specs;
}

/**
 * A copy of `message`, as the other side of a network call decodes it. `clone` refuses a string that is not valid
 * UTF-16 (a lone surrogate, which a JSON body can carry); the wire encodes one as U+FFFD, so such a message is copied
 * through its binary encoding instead, and the service sees what it would see over the network.
 */
function copyOf<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): MessageShape<Desc> {
  try {
    return clone(schema, message);
  } catch {
    return fromBinary(schema, toBinary(schema, message));
  }
}

/** Interceptors applied outermost first, as Connect applies them. */
function applyInterceptors<Request, Response>(next: (request: Request) => Promise<Response>, interceptors: Interceptor[]) {
  return interceptors.reduceRight((inner, interceptor) => interceptor(inner as never) as never, next);
}

/** Why a finished call's signal is aborted (made once: an abort without a reason builds a DOMException). */
const CALL_FINISHED = new ConnectError('the call has finished', Code.Canceled);

/**
 * The signal of one call: aborted by the caller's signal (Canceled), at `timeoutMs` (DeadlineExceeded, as
 * Connect's transports say it), and by `finish()` once the call is over.
 */
function callSignalOf(caller: AbortSignal | undefined, timeoutMs: number | undefined): { signal: AbortSignal; finish(): void } {
  const controller = new AbortController();
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => controller.abort(new ConnectError('the operation timed out', Code.DeadlineExceeded)), timeoutMs);
  const onCallerAbort = () => controller.abort(ConnectError.from(caller!.reason, Code.Canceled));
  if (caller?.aborted) onCallerAbort();
  else caller?.addEventListener('abort', onCallerAbort, { once: true });
  return {
    signal: controller.signal,
    finish() {
      clearTimeout(timer);
      caller?.removeEventListener('abort', onCallerAbort);
      controller.abort(CALL_FINISHED);
    },
  };
}

/**
 * Settles with the call's abort reason once its signal (`callSignalOf`, whose every reason is a ConnectError) aborts
 * at the deadline or on the caller's cancel, as a network client does.
 */
function untilAborted(signal: AbortSignal): { promise: Promise<never>; cancel(): void } {
  let cancel = () => undefined as void;
  const promise = new Promise<never>((_, reject) => {
    const onAbort = () => reject(signal.reason as ConnectError);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    cancel = () => signal.removeEventListener('abort', onAbort);
  });
  promise.catch(() => undefined);
  return { promise, cancel };
}

/** Deadline of a call (epoch milliseconds), carried to its handler's `timeoutMs()`. */
const deadlineKey = Symbol('in-process deadline');

/**
 * What a handler sees of its call. Its signal is the call's: aborted at the deadline, on the caller's cancel, and
 * once the call has finished (as Connect's own handler contexts are).
 */
function handlerContextOf(request: UnaryRequest & { [deadlineKey]?: number }): HandlerContext {
  const deadlineAt = request[deadlineKey];
  return {
    method: request.method,
    service: request.service,
    signal: request.signal,
    timeoutMs: () => (deadlineAt === undefined ? undefined : deadlineAt - Date.now()),
    requestMethod: request.requestMethod,
    requestHeader: request.header,
    responseHeader: new Headers(),
    responseTrailer: new Headers(),
    protocolName: 'in-process',
    values: request.contextValues,
    url: request.url,
  };
}

/**
 * @param routes registers the services (the same function the network server mounts)
 * @param serverInterceptors what the network server applies to every call, outermost first (no credential check:
 *   the caller is this process)
 * @param clientInterceptors what a network client would apply (the trace's client span)
 */
export function createDirectTransport(
  routes: (router: ConnectRouter) => void,
  serverInterceptors: Interceptor[],
  clientInterceptors: Interceptor[] = [],
): Transport {
  const specs = collectUnaryImplementations(routes);

  /** The server side of one call: a handler context, the interceptors, the implementation, a normalized answer. */
  const serve = applyInterceptors<UnaryRequest, UnaryResponse>(async (request) => {
    const spec = specs.get(`${request.service.typeName}/${request.method.name}`)!;
    const context = handlerContextOf(request);
    const answer = await spec.impl(request.message, context);
    return {
      stream: false,
      service: request.service,
      method: request.method,
      header: context.responseHeader,
      trailer: context.responseTrailer,
      message: create(request.method.output, answer),
    };
  }, serverInterceptors);

  /** The caller's side: its interceptors, then the served call, which the call's abort ends at once. */
  const call = applyInterceptors<UnaryRequest, UnaryResponse>(async (request) => {
    const aborted = untilAborted(request.signal);
    try {
      const served = serve({
        ...request,
        // The handler's own copy, as a decoded network message is; and its own context values.
        message: copyOf(request.method.input, request.message),
        contextValues: createContextValues(),
      });
      const response = await Promise.race([served, aborted.promise]);
      return { ...response, message: copyOf(request.method.output, response.message) };
    } finally {
      aborted.cancel();
    }
  }, clientInterceptors);

  return {
    unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: Parameters<Transport['unary']>[3],
      input: Parameters<Transport['unary']>[4],
      contextValues: Parameters<Transport['unary']>[5],
    ): Promise<UnaryResponse<I, O>> {
      const name = `${method.parent.typeName}/${method.name}`;
      if (!specs.has(name)) return Promise.reject(new ConnectError(`${name} is not served here`, Code.Unimplemented));
      const { signal: callSignal, finish } = callSignalOf(signal, timeoutMs);
      const request = {
        stream: false,
        service: method.parent,
        method,
        requestMethod: 'POST',
        url: `in-process:/${name}`,
        header: new Headers(header),
        contextValues: contextValues ?? createContextValues(),
        message: create(method.input, input as never),
        signal: callSignal,
        [deadlineKey]: timeoutMs === undefined ? undefined : Date.now() + timeoutMs,
      } as UnaryRequest;
      return call(request).then(
        (response) => {
          finish();
          return response as unknown as UnaryResponse<I, O>;
        },
        (error: unknown) => {
          const failure = ConnectError.from(callSignal.aborted ? callSignal.reason : error);
          finish();
          throw failure;
        },
      );
    },
    stream(method) {
      return Promise.reject(new ConnectError(`${method.parent.typeName}/${method.name}: streaming is not served in process`, Code.Unimplemented));
    },
  };
}
