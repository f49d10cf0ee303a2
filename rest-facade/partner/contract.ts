/**
 * Area A at the façade (payment-services-interface.md "Area A", platform decisions §6). The answer rules of the
 * gateway (field rules, the error table, signing) live with the flow, on the api side
 * (src/flows/pre-transfer/area-a.ts and gateway.ts); they are re-exported here for the token route and the tests.
 * The façade's own answers are the token route's unsigned ones and its edge answers below.
 */
import { errorEnvelope, SYSTEM_ERROR, validationError, type AreaAError } from '../../src/flows/pre-transfer/area-a';

export {
  AREA_A_ERRORS,
  AREA_A_LIMITS,
  AREA_A_SERVICES,
  RATE_LIMITED_ERROR,
  SYSTEM_ERROR,
  UNAUTHENTICATED_ERROR,
  errorEnvelope,
  type AreaAError,
  type AreaAService,
} from '../../src/flows/pre-transfer/area-a';

/** The façade's own answers on an Area A path: unknown route, wrong method, body too large, last-resort fault. */
export function areaAEdgeError(status: 404 | 405 | 413 | 500 | 503): { status: number; body: Record<string, unknown> } {
  const body = (error: AreaAError) => errorEnvelope(error);
  if (status === 404) return { status, body: body({ status, error_code: 'NOTEXIST', error_desc: 'No such route.' }) };
  if (status === 405) return { status, body: body(validationError('method not allowed')) };
  if (status === 413) return { status, body: body(validationError('the request body is too large')) };
  // 503: refused by admission control (busy); retry after Retry-After.
  return { status, body: body(SYSTEM_ERROR) };
}
