/**
 * The payment search attributes on the platform's side (docs/operations.md "Search attributes"): the keys are defined
 * once in workflows/search-attributes.ts (the workflows own them) and re-exported here;
 * this module registers them on a Temporal server, checks a namespace has them, and builds the start option a
 * service passes when it starts a payment's workflow.
 */
import { Connection, type ConnectionLike } from '@temporalio/client';
import type { SearchAttributePair, SearchAttributeType } from '@temporalio/common';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import {
  PAYMENT_AMOUNT_UNITS,
  PAYMENT_CURRENCY,
  PAYMENT_KIND,
  PAYMENT_ORDER_ID,
  PAYMENT_OWNER_ID,
  PAYMENT_PARTNER_TRANSACTION_ID,
  PAYMENT_SEARCH_ATTRIBUTE_KEYS,
  PAYMENT_STATUS,
  type PaymentKind,
} from '../../workflows/search-attributes';
import { formatAmount, isCurrency } from '../money';
import type { TemporalConnectionOptions } from './connection-options';

export {
  PAYMENT_AMOUNT_UNITS,
  PAYMENT_CURRENCY,
  PAYMENT_KIND,
  PAYMENT_ORDER_ID,
  PAYMENT_OWNER_ID,
  PAYMENT_PARTNER_TRANSACTION_ID,
  PAYMENT_SEARCH_ATTRIBUTE_KEYS,
  PAYMENT_STATUS,
  type PaymentKind,
};

/** The type names the Temporal CLI and the Web UI use (`Keyword`, `Int`). */
const CLI_TYPE_NAMES: Record<SearchAttributeType, string> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

/** `Name=Type` of every key, as `temporal server start-dev --search-attribute` and `temporal operator` take them. */
export function searchAttributeSpecs(): string[] {
  return PAYMENT_SEARCH_ATTRIBUTE_KEYS.map((key) => `${key.name}=${CLI_TYPE_NAMES[key.type]}`);
}

/** The `--search-attribute Name=Type` flags registering every key on `temporal server start-dev`. */
export function devServerSearchAttributeArgs(): string[] {
  return searchAttributeSpecs().flatMap((spec) => ['--search-attribute', spec]);
}

/** Whose payment a workflow moves: the value of PaymentOwnerId is `merchant:<id>` or `partner:<id>`. */
export type PaymentOwner = { merchant_id: string } | { partner_id: string };

/** `merchant:<merchant_id>` or `partner:<partner_id>`, the PaymentOwnerId of `owner`. */
export function paymentOwnerId(owner: PaymentOwner): string {
  return 'merchant_id' in owner ? `merchant:${owner.merchant_id}` : `partner:${owner.partner_id}`;
}

const CANONICAL_UNITS = /^(0|[1-9][0-9]*)$/;
/** Temporal's Web UI shows a static summary on one line: past this many characters an order id is cut short. */
const SUMMARY_ORDER_ID_CHARS = 64;

/** What a payment's workflow starts with: its search attributes and the static summary the Web UI lists. */
export interface PaymentStartOptions {
  typedSearchAttributes: SearchAttributePair[];
  /** One line: kind, amount in major units and currency, owner, order id (the Web UI's workflow list). */
  staticSummary: string;
  /** Markdown: the same facts, whole (the amount in minor units too, the order id uncut), on the run's page. */
  staticDetails: string;
}

/** `11.75 USDT`: major units for a currency the platform knows, else `<units> minor units <currency>`. */
function amountText(units: bigint, currency: string): string {
  return isCurrency(currency) ? `${formatAmount(units, currency)} ${currency}` : `${units} minor units ${currency}`;
}

/**
 * The search attributes and static summary a payment's workflow starts with, as start options
 * (`client.workflow.start(wf, { …, ...paymentSearchAttributes({ … }) })`): PaymentOwnerId, PaymentKind,
 * PaymentAmountUnits and PaymentCurrency (when an amount is given), PaymentOrderId (the merchant's `out_trade_no`,
 * when given), PaymentStatus (when given; the workflow sets it otherwise, on its first state), and `staticSummary` /
 * `staticDetails` (docs/operations.md "Search attributes"). `amount_units` is the amount in minor units (a canonical
 * decimal string or a bigint); above Number.MAX_SAFE_INTEGER (2^53 − 1) PaymentAmountUnits is left out, since a
 * search attribute's Int travels as a JSON number and would be rounded: a wrong amount is worse than none for an
 * operator filtering on it.
 * @throws TypeError when `amount_units` is not a canonical decimal of minor units (a caller's bug)
 */
export function paymentSearchAttributes(input: {
  owner: PaymentOwner;
  kind: PaymentKind;
  /** Minor units, with `currency`; a webhook delivery whose event carries no amount has none. */
  amount_units?: string | bigint;
  currency?: string;
  status?: string;
  order_id?: string;
}): PaymentStartOptions {
  const owner = paymentOwnerId(input.owner);
  const pairs: SearchAttributePair[] = [
    { key: PAYMENT_OWNER_ID, value: owner },
    { key: PAYMENT_KIND, value: input.kind },
  ];
  const summary: string[] = [input.kind];
  const details = [`**${input.kind}** of \`${owner}\``];
  if (input.amount_units !== undefined && input.currency !== undefined) {
    const units = typeof input.amount_units === 'bigint' ? input.amount_units : CANONICAL_UNITS.test(input.amount_units) ? BigInt(input.amount_units) : undefined;
    if (units === undefined || units < 0n) throw new TypeError(`amount_units must be a canonical decimal of minor units, got ${JSON.stringify(String(input.amount_units))}`);
    pairs.push({ key: PAYMENT_CURRENCY, value: input.currency });
    if (units <= BigInt(Number.MAX_SAFE_INTEGER)) pairs.push({ key: PAYMENT_AMOUNT_UNITS, value: Number(units) });
    summary.push(amountText(units, input.currency));
    details.push(`- amount: ${amountText(units, input.currency)} (${units} minor units)`);
  }
  summary.push(owner);
  if (input.status !== undefined) pairs.push({ key: PAYMENT_STATUS, value: input.status });
  if (input.order_id !== undefined) {
    pairs.push({ key: PAYMENT_ORDER_ID, value: input.order_id });
    const cut = [...input.order_id];
    summary.push(`order ${cut.length > SUMMARY_ORDER_ID_CHARS ? `${cut.slice(0, SUMMARY_ORDER_ID_CHARS - 1).join('')}…` : input.order_id}`);
    details.push(`- order id: \`${input.order_id}\``);
  }
  return { typedSearchAttributes: pairs, staticSummary: summary.join(' · '), staticDetails: details.join('\n') };
}

/** A visibility query naming every key (each compared with a value of its type), valid only where all are known. */
function probeQuery(): string {
  return PAYMENT_SEARCH_ATTRIBUTE_KEYS.map((key) => `${key.name} = ${key.type === 'INT' ? '0' : '""'}`).join(' AND ');
}

/** Thrown when a namespace lacks a payment search attribute or holds one of another type. */
export class SearchAttributesMissingError extends Error {
  /** `explain`: add what the workflows write and where the docs say how to register them. */
  constructor(namespace: string, detail: string, explain = true) {
    super(
      `the Temporal namespace ${namespace} ${detail}` +
        (explain ? `: the workflows write them (${searchAttributeSpecs().join(', ')}); register them (docs/operations.md "Search attributes")` : ' (docs/operations.md "Search attributes")'),
    );
    this.name = 'SearchAttributesMissingError';
  }
}

/**
 * Checks that `namespace` knows every payment search attribute, through a visibility query naming them all (a plain
 * client call, allowed where the operator service is not, e.g. a hosted Temporal). Without them every upsert of a
 * workflow would fail its workflow task, over and over, until they are registered: a worker refuses to start instead.
 * @throws SearchAttributesMissingError when one is unknown; the call's own error when Temporal cannot answer
 */
export async function assertPaymentSearchAttributes(connection: ConnectionLike & Pick<Connection, 'workflowService'>, namespace: string): Promise<void> {
  try {
    await connection.workflowService.listWorkflowExecutions({ namespace, pageSize: 1, query: probeQuery() });
  } catch (error) {
    if (/not a valid search attribute|invalid query|unknown search attribute/i.test((error as Error).message)) {
      throw new SearchAttributesMissingError(namespace, 'lacks a payment search attribute');
    }
    throw error;
  }
}

/** gRPC status codes after which a retry is worthwhile (the frontend could not answer); any other is the frontend's "no". */
const TRANSIENT_GRPC_CODES = new Set([4 /* DEADLINE_EXCEEDED */, 14 /* UNAVAILABLE */]);

/** The payment search attributes `namespace` lacks (every key when the operator service may not list them). */
async function missingSearchAttributes(connection: Pick<Connection, 'operatorService'>, namespace: string): Promise<Record<string, number>> {
  const listed = await connection.operatorService.listSearchAttributes({ namespace });
  const existing = { ...listed.systemAttributes, ...listed.customAttributes };
  const missing: Record<string, number> = {};
  for (const key of PAYMENT_SEARCH_ATTRIBUTE_KEYS) {
    const wanted = encodeSearchAttributeIndexedValueType(key.type)!;
    const found = existing[key.name];
    if (found === undefined || found === null) missing[key.name] = wanted;
    else if (found !== wanted) throw new SearchAttributesMissingError(namespace, `holds ${key.name} with another type than ${CLI_TYPE_NAMES[key.type]}`);
  }
  return missing;
}

/**
 * The Temporal CLI command that registers `names` (default: every payment search attribute) on `namespace`, with
 * `connectionFlags` (`--address …`, TLS; temporalCliFlags of connection-options.ts) before the names.
 */
export function searchAttributeCreateCommand(namespace: string, connectionFlags: string[] = [], names?: string[]): string {
  const keys = PAYMENT_SEARCH_ATTRIBUTE_KEYS.filter((key) => !names || names.includes(key.name));
  return ['temporal operator search-attribute create', ...connectionFlags, `--namespace ${namespace}`, ...keys.map((key) => `--name ${key.name} --type ${CLI_TYPE_NAMES[key.type]}`)].join(' ');
}

/**
 * Makes sure `namespace` has every payment search attribute before a role starts (docs/operations.md "Search
 * attributes"): present (a visibility query naming them, allowed everywhere), else registered through the operator
 * service's AddSearchAttributes when the frontend allows it, then waited for until the frontend accepts a query naming
 * them (its namespace cache refreshes within seconds). Idempotent: a second call registers nothing.
 * `connectionFlags` go into the command of the refusal (`--address host:port` and the TLS flags).
 * @throws SearchAttributesMissingError, one line giving the exact `temporal operator search-attribute create` command,
 *   when the frontend refuses to list or register them (a credential without the operator's right, Temporal Cloud),
 *   or when one exists with another type; the call's own error when Temporal cannot answer
 */
export async function registerPaymentSearchAttributes(
  connection: Pick<Connection, 'operatorService' | 'workflowService'> & ConnectionLike,
  namespace: string,
  log: (line: string) => void,
  connectionFlags: string[] = [],
  waitSeconds = 30,
): Promise<void> {
  try {
    await assertPaymentSearchAttributes(connection, namespace);
    return;
  } catch (error) {
    if (!(error instanceof SearchAttributesMissingError)) throw error;
  }
  let missing: Record<string, number> | undefined;
  try {
    missing = await missingSearchAttributes(connection, namespace);
    if (Object.keys(missing).length > 0) {
      try {
        await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: missing });
      } catch (error) {
        // Another process registered them meanwhile.
        if (!/already exists/i.test((error as Error).message)) throw error;
      }
      log(`registered the search attributes ${Object.keys(missing).join(', ')} in the Temporal namespace ${namespace}`);
    }
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (error instanceof SearchAttributesMissingError || typeof code !== 'number' || TRANSIENT_GRPC_CODES.has(code)) throw error;
    const names = missing && Object.keys(missing);
    throw new SearchAttributesMissingError(
      namespace,
      `lacks the payment search attributes${names ? ` ${names.join(', ')}` : ''} and the frontend refused to register them (${(error as Error).message.split('\n')[0]}): register them with \`${searchAttributeCreateCommand(namespace, connectionFlags, names)}\`, then start again`,
      false,
    );
  }
  const deadline = Date.now() + waitSeconds * 1000;
  for (;;) {
    try {
      await assertPaymentSearchAttributes(connection, namespace);
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/**
 * Registers every payment search attribute on the server at `address` (registerPaymentSearchAttributes over a
 * connection of its own; `payments cluster up` after registering the namespace).
 * @throws what registerPaymentSearchAttributes throws
 */
export async function ensurePaymentSearchAttributes(
  address: string,
  namespace: string,
  log: (line: string) => void,
  security: TemporalConnectionOptions = {},
  waitSeconds = 30,
): Promise<void> {
  const connection = await Connection.connect({ address, ...security });
  try {
    await registerPaymentSearchAttributes(connection, namespace, log, [`--address ${address}`], waitSeconds);
  } finally {
    await connection.close();
  }
}
