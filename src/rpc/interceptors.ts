/**
 * Connect interceptors applied to every platform RPC: protovalidate request validation, domain error mapping,
 * and logging. Registered once in `server.ts`.
 */
import type { DescMessage, Message } from '@bufbuild/protobuf';
import { pathToString, type Path } from '@bufbuild/protobuf/reflect';
import { createValidator } from '@bufbuild/protovalidate';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { DomainError, invalidFields, type FieldViolations } from '../errors';
import type { Logger } from '../logger';
import { toConnectError } from './errors';

const validator = createValidator();

/** Field path of a protovalidate violation as the client knows it ("amount", "card.number"). */
function violationPath(violation: { field: Path }): string {
  return violation.field.length ? pathToString(violation.field) : 'request';
}

/**
 * Rejects a request message that breaks its `buf.validate` annotations with InvalidArgument and an ErrorDetail
 * listing every failing field.
 */
export const validationInterceptor: Interceptor = (next) => async (request) => {
  if (!request.stream) {
    const result = validator.validate(request.method.input as DescMessage, request.message as Message);
    if (result.kind === 'invalid') {
      const fields: FieldViolations = {};
      for (const violation of result.violations) {
        const path = violationPath(violation);
        (fields[path] ??= []).push(violation.message);
      }
      throw toConnectError(invalidFields(fields));
    }
    if (result.kind === 'error') throw new ConnectError('request validation failed', Code.Internal);
  }
  return next(request);
};

/**
 * Converts DomainError to ConnectError with a Code and ErrorDetail; logs anything unexpected once and hides its
 * message from the client.
 */
export function errorInterceptor(logger: Logger): Interceptor {
  return (next) => async (request) => {
    try {
      return await next(request);
    } catch (error) {
      if (error instanceof DomainError) {
        if (error.kind === 'internal') logger.error({ err: error, procedure: request.method.name }, 'rpc failed');
        throw toConnectError(error);
      }
      if (error instanceof ConnectError) throw error;
      logger.error({ err: error, procedure: `${request.service.typeName}/${request.method.name}` }, 'rpc failed');
      throw new ConnectError('internal error', Code.Internal);
    }
  };
}
