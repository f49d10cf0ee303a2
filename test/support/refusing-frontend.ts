/**
 * A Temporal frontend that refuses the operator service: a gRPC proxy in front of a real Temporal server that
 * forwards every WorkflowService and health call unchanged and answers every OperatorService call PERMISSION_DENIED,
 * as a frontend with an authorizer answers a credential without the operator's right (Temporal Cloud's namespace
 * endpoints do the same). Nothing of Temporal is imitated: what it forwards, the real server answers.
 */
import * as grpc from '@grpc/grpc-js';

/** The Temporal API's descriptors (protobufjs), as the SDK ships them. */
const root = require('@temporalio/proto/protos/json-module') as { lookupService(name: string): { methods: Record<string, unknown> } };

const FORWARDED_SERVICES = ['temporal.api.workflowservice.v1.WorkflowService'];
const REFUSED_SERVICES = ['temporal.api.operatorservice.v1.OperatorService'];

const bytes = (value: Buffer) => value;

/** A service definition passing every unary method of `service` through as bytes. */
function rawDefinition(service: string, methods: string[]): grpc.ServiceDefinition {
  return Object.fromEntries(
    methods.map((method) => [
      method,
      { path: `/${service}/${method}`, requestStream: false, responseStream: false, requestSerialize: bytes, requestDeserialize: bytes, responseSerialize: bytes, responseDeserialize: bytes },
    ]),
  );
}

function methodsOf(service: string): string[] {
  return Object.keys(root.lookupService(service).methods);
}

export interface RefusingFrontend {
  address: string;
  /** The operator calls refused so far, by method name. */
  refused: string[];
  close(): Promise<void>;
}

/** Starts the proxy on a free port of 127.0.0.1 in front of the Temporal frontend at `target` (host:port). */
export async function startRefusingFrontend(target: string): Promise<RefusingFrontend> {
  const upstream = new grpc.Client(target, grpc.credentials.createInsecure());
  const server = new grpc.Server();
  const refused: string[] = [];
  const forward = (path: string): grpc.handleUnaryCall<Buffer, Buffer> => (call, callback) => {
    upstream.makeUnaryRequest(path, bytes, bytes, call.request, call.metadata, { deadline: call.getDeadline() }, (error, response) => callback(error, response));
  };
  const refuse = (method: string): grpc.handleUnaryCall<Buffer, Buffer> => (_call, callback) => {
    refused.push(method);
    callback({ code: grpc.status.PERMISSION_DENIED, details: 'Request unauthorized.' });
  };
  type Handler = (service: string, method: string) => grpc.handleUnaryCall<Buffer, Buffer>;
  const services: Array<{ service: string; methods: string[]; handler: Handler }> = [
    ...FORWARDED_SERVICES.map((service) => ({ service, methods: methodsOf(service), handler: (name: string, method: string) => forward(`/${name}/${method}`) })),
    { service: 'grpc.health.v1.Health', methods: ['Check'], handler: (name, method) => forward(`/${name}/${method}`) },
    ...REFUSED_SERVICES.map((service) => ({ service, methods: methodsOf(service), handler: (_name: string, method: string) => refuse(method) })),
  ];
  for (const { service, methods, handler } of services) {
    server.addService(rawDefinition(service, methods), Object.fromEntries(methods.map((method) => [method, handler(service, method)])));
  }
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  return {
    address: `127.0.0.1:${port}`,
    refused,
    close: async () => {
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      upstream.close();
    },
  };
}
