/**
 * Area A's edge answers at the façade (payment-services-interface.md "Area A", platform decisions §6): an unknown
 * route, a wrong method, a body too large, a last-resort fault. Every other answer rule of Area A (field rules, the
 * error table, envelopes, signing) lives with the flow, on the api side (src/flows/pre-transfer/area-a.ts and
 * gateway.ts); the router answers its token route's unsigned refusals with the same table.
 */
import { errorEnvelope, SYSTEM_ERROR, validationError, type AreaAError } from '../../src/flows/pre-transfer/area-a';

/** The façade's own answers on an Area A path: unknown route, wrong method, body too large, last-resort fault. */
export function areaAEdgeError(status: 404 | 405 | 413 | 500 | 503): { status: number; body: Record<string, unknown> } {
  const body = (error: AreaAError) => errorEnvelope(error);
  if (status === 404) return { status, body: body({ status, error_code: 'NOTEXIST', error_desc: 'No such route.' }) };
  if (status === 405) return { status, body: body(validationError('method not allowed')) };
  if (status === 413) return { status, body: body(validationError('the request body is too large')) };
  // 503: refused by admission control (busy); retry after Retry-After.
  return { status, body: body(SYSTEM_ERROR) };
}
