/**
 * docs/openapi.yaml: a valid OpenAPI 3.1 document (@readme/openapi-parser), every example valid against
 * its own schema, formats included (Ajv, JSON Schema 2020-12), and in step with the contract tables the façade
 * answers from: the Area A services and error table, the Area B messages, the Area C services and messages.
 * `npm run lint` lints it too (Redocly CLI, redocly.yaml).
 * The façade's routes are compared with the document by test/integration/docs.test.ts.
 */
import { dereference, validate } from '@readme/openapi-parser';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { MERCHANT_SERVICE_TABLES } from '../../rest-facade/merchant/router';
import { AUTH_MESSAGES, CARD_MESSAGES, DEPOSIT_MESSAGES, INSTRUMENT_MESSAGES, INTERNAL_ERROR_MESSAGE, MESSAGES, TOKENIZE_MESSAGES } from '../../rest-facade/merchant/contract';
import { PAYIN_MESSAGES } from '../../rest-facade/payin/contract';
import { AREA_A_ERRORS, AREA_A_SERVICES, SYSTEM_ERROR } from '../../src/flows/pre-transfer/area-a';

const DOCUMENT_PATH = path.join(__dirname, '..', '..', 'docs', 'openapi.yaml');
const text = readFileSync(DOCUMENT_PATH, 'utf8');
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
const document: Json = parse(text);

/** Every example in the document with the schema it illustrates, located by a readable path. */
function examplesWithSchemas(resolved: Json): Array<{ where: string; schema: Json; value: unknown }> {
  const found: Array<{ where: string; schema: Json; value: unknown }> = [];
  const visitContent = (where: string, content: Json) => {
    for (const [mediaType, media] of Object.entries<Json>(content ?? {})) {
      if (!media.schema) continue;
      if (media.example !== undefined) found.push({ where: `${where} ${mediaType}`, schema: media.schema, value: media.example });
      for (const [name, example] of Object.entries<Json>(media.examples ?? {})) {
        found.push({ where: `${where} ${mediaType} example ${name}`, schema: media.schema, value: example.value });
      }
    }
  };
  const visitOperation = (where: string, operation: Json) => {
    visitContent(`${where} request`, operation.requestBody?.content);
    for (const [status, response] of Object.entries<Json>(operation.responses ?? {})) visitContent(`${where} ${status}`, response.content);
  };
  for (const [route, item] of Object.entries<Json>(resolved.paths)) {
    for (const [method, operation] of Object.entries<Json>(item)) visitOperation(`${method.toUpperCase()} ${route}`, operation);
  }
  for (const [name, item] of Object.entries<Json>(resolved.webhooks ?? {})) {
    for (const [method, operation] of Object.entries<Json>(item)) visitOperation(`webhook ${name} ${method}`, operation);
  }
  return found;
}

/** The whole document as JSON text (examples of shared responses included), to look messages up in. */
const allExampleText = JSON.stringify(document);

describe('docs/openapi.yaml', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    expect(document.openapi).toBe('3.1.0');
    const result = await validate(DOCUMENT_PATH);
    expect(result.valid ? [] : result.errors).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('has every example valid against its schema', async () => {
    const resolved = await dereference(structuredClone(document));
    // Formats too (uri, email, date, …): an example a client copies must be a value the format accepts.
    const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
    const examples = examplesWithSchemas(resolved);
    expect(examples.length).toBeGreaterThan(100);
    const failures = examples
      .map(({ where, schema, value }) => {
        const check = ajv.compile(schema);
        return check(value) ? undefined : `${where}: ${ajv.errorsText(check.errors)}`;
      })
      .filter(Boolean);
    expect(failures).toEqual([]);
  });

  it('documents the Area A gateway services and every Area A error with its status', () => {
    const gateway = document.paths['/partnerapi/v1/gateway'].post;
    expect(Object.keys(gateway.requestBody.content['application/json'].schema.discriminator.mapping).sort()).toEqual([...AREA_A_SERVICES].sort());
    for (const error of [...Object.values(AREA_A_ERRORS), SYSTEM_ERROR]) {
      const routes = error.error_code === 'UNAUTHENTICATED' ? [document.components.responses.AreaAUnauthenticated] : [gateway.responses[String(error.status)]];
      const text = JSON.stringify(routes);
      expect({ error, documented: text.includes(`"error_code":"${error.error_code}"`) && text.includes(`"error_desc":"${error.error_desc}"`) }).toEqual({ error, documented: true });
    }
  });

  it('shows every Area B message of the error table', () => {
    for (const message of Object.values(PAYIN_MESSAGES)) expect({ message, found: allExampleText.includes(`"message":"${message}"`) }).toEqual({ message, found: true });
  });

  it('documents every registered /do-action service as a request schema of its own', () => {
    const registered = MERCHANT_SERVICE_TABLES.flatMap((table) => Object.keys(table)).sort();
    const mapping: Record<string, string> = document.components.schemas.DoActionRequest.discriminator.mapping;
    for (const service of registered) expect({ service, documented: service in mapping }).toEqual({ service, documented: true });
    for (const [service, reference] of Object.entries(mapping)) {
      const schema = document.components.schemas[reference.split('/').pop()!];
      const own = schema.allOf.find((part: Json) => part.properties?.service);
      expect(own.properties.service.const).toBe(service);
      // The request example of each service is given.
      expect(document.paths['/do-action'].post.requestBody.content['application/json'].examples[service]?.value.service).toBe(service);
    }
  });

  it('shows the Area C authentication, envelope and field messages', () => {
    const fixed = [
      ...Object.values(AUTH_MESSAGES),
      INTERNAL_ERROR_MESSAGE,
      MESSAGES.phoneOrEmail,
      MESSAGES.emailOrPhone,
      MESSAGES.feesCurrencyRequired,
      MESSAGES.feesCurrencyMismatch,
      MESSAGES.sameUser,
      MESSAGES.insufficientFunds,
      MESSAGES.currency('currency'),
      MESSAGES.required('out_trade_no'),
      MESSAGES.date('birthday'),
      MESSAGES.percent('commission_rate'),
      MESSAGES.userNotFound('from_user_id'),
      MESSAGES.maxValue('per_page', 100),
      // Area C instruments and deposits (docs/area-c.md); `declined` is a page's result.
      ...Object.values(DEPOSIT_MESSAGES).filter((message) => message !== DEPOSIT_MESSAGES.declined),
      ...Object.values(CARD_MESSAGES).map((message) => (typeof message === 'function' ? message('bank_number') : message)),
      ...Object.values(TOKENIZE_MESSAGES).filter((message) => message !== TOKENIZE_MESSAGES.activationNotFound),
      INSTRUMENT_MESSAGES.tokenInvalid,
      INSTRUMENT_MESSAGES.notActivated,
      INSTRUMENT_MESSAGES.holderName,
    ];
    for (const message of fixed) expect({ message, found: allExampleText.includes(JSON.stringify(message)) }).toEqual({ message, found: true });
  });
});
