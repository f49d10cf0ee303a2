/**
 * The signed-body bindings of src/merchant-auth (SIGNED_BODY_BINDINGS): every Area C RPC that carries the
 * merchant's proof has an entry naming every typed field of its request, and a typed field equals its body parameter exactly when the
 * façade's field readers would have produced it from that body.
 */
import { create, type DescMessage } from '@bufbuild/protobuf';
import { DepositService } from '../../src/gen/payments/deposit/v1/deposit_pb';
import { EventsQuerySchema } from '../../src/gen/payments/events/v1/events_pb';
import { GetPaymentTimelineRequestSchema } from '../../src/gen/payments/timeline/v1/timeline_pb';
import { InstrumentService } from '../../src/gen/payments/instrument/v1/instrument_pb';
import { PayoutService } from '../../src/gen/payments/payout/v1/payout_pb';
import { LoginRequestSchema, TransferRequestSchema, ListBanksRequestSchema, WalletService } from '../../src/gen/payments/wallet/v1/wallet_pb';
import { SIGNED_BODY_BINDINGS, UNBOUND_FIELDS, unboundFields } from '../../src/merchant-auth';
import { parseJsonLossless } from '../../src/money';
import { readListBanks, readLogin, readTransfer } from '../../rest-facade/merchant/wallet-services';
import { readListEvents, readListTimeline } from '../../rest-facade/merchant/history-services';

/**
 * The requests whose merchant proof travels as an owner's proof (payments.events.v1.OwnerProof `area_c`): the events
 * page's query and the timeline's request.
 */
const OWNER_PROOF_REQUESTS: DescMessage[] = [EventsQuerySchema, GetPaymentTimelineRequestSchema];

/** The input messages of every method whose request carries the merchant's proof (ActionAuth or SignedEnvelope). */
function signedInputs(): DescMessage[] {
  return [WalletService, DepositService, InstrumentService, PayoutService]
    .flatMap((service) => service.methods.map((method) => method.input))
    .filter((input) => input.fields.some((field) => field.localName === 'auth' || (field.localName === 'envelope' && input.typeName !== 'payments.wallet.v1.AuthenticateActionRequest')));
}

const body = (json: string) => parseJsonLossless(json) as Record<string, unknown>;

describe('SIGNED_BODY_BINDINGS', () => {
  it('has an entry for every RPC carrying the merchant proof, naming each of its typed fields, and no other', () => {
    const inputs = [...signedInputs(), ...OWNER_PROOF_REQUESTS];
    expect(inputs.length).toBe(23);
    expect(Object.keys(SIGNED_BODY_BINDINGS).sort()).toEqual(inputs.map((input) => input.typeName).sort());
    for (const input of inputs) {
      const bound = Object.keys(SIGNED_BODY_BINDINGS[input.typeName]!.fields).sort();
      const typed = input.fields.map((field) => field.localName).filter((name) => !UNBOUND_FIELDS.has(name)).sort();
      expect({ request: input.typeName, bound }).toEqual({ request: input.typeName, bound: typed });
    }
  });
});

describe('unboundFields', () => {
  const transferBody = body('{"service":"transfer","from_user_id":12,"to_user_id":"13","amount":10.50,"currency":"USD","fees_amount":"0.25","fees_currency":"USD"}');
  const transfer = (fields: Record<string, unknown>) => create(TransferRequestSchema, { ...readTransfer(transferBody), ...fields });

  it('accepts the typed request the façade reads from the signed body', () => {
    expect(unboundFields(transfer({}), transferBody)).toEqual([]);
    const banks = body('{"service":"list_banks"}');
    expect(unboundFields(create(ListBanksRequestSchema, readListBanks(banks)), banks)).toEqual([]);
    const login = body('{"user_name":"api","password":"secret","timestamp":1700000000}');
    expect(unboundFields(create(LoginRequestSchema, readLogin(login)), login)).toEqual([]);
  });

  it('names every typed field the body does not say', () => {
    expect(unboundFields(transfer({ amountUnits: 90_000n }), transferBody)).toEqual(['amountUnits']);
    expect(unboundFields(transfer({ fromUserId: '13', toUserId: '12' }), transferBody)).toEqual(['fromUserId', 'toUserId']);
    expect(unboundFields(transfer({ feesAmountUnits: 0n, feesCurrency: '' }), transferBody)).toEqual(['feesAmountUnits', 'feesCurrency']);
  });

  it('refuses the body of another service, and a login body for an action (and the reverse)', () => {
    expect(unboundFields(transfer({}), { ...transferBody, service: 'block_money' })).toEqual(['service']);
    expect(unboundFields(create(LoginRequestSchema, { userName: 'api', password: 'secret' }), { ...body('{"user_name":"api","password":"secret"}'), service: 'list_fees' })).toEqual(['service']);
    expect(unboundFields(transfer({}), body('{"user_name":"api","password":"secret"}'))).toEqual(['service']);
  });

  it('reads an amount as the readers do (number or text, trailing zeros alike), refusing what is no amount', () => {
    const amountBody = (amount: string) => body(`{"service":"transfer","from_user_id":12,"to_user_id":13,"amount":${amount},"currency":"USD"}`);
    const typed = (units: bigint) => create(TransferRequestSchema, { fromUserId: '12', toUserId: '13', amountUnits: units, currency: 'USD' });
    for (const amount of ['10.50', '10.5', '"10.50"', '1.05e1']) expect(unboundFields(typed(1050n), amountBody(amount))).toEqual([]);
    expect(unboundFields(typed(1050n), amountBody('10.505'))).toEqual(['amountUnits']);
    expect(unboundFields(typed(0n), amountBody('true'))).toEqual(['amountUnits']);
    // The largest accepted amount signs as its exact text (a double holds 15 significant digits).
    expect(unboundFields(typed(999_999_999_999_999n), amountBody('9999999999999.99'))).toEqual([]);
    expect(String(Number('9999999999999.99'))).toBe('9999999999999.99');
  });

  it('treats blank text as absent, as the readers do', () => {
    const blank = body('{"service":"deposit_by_local_card","token":"tok_x","amount":1,"currency":"USD","pre_order_token":"   "}');
    expect(unboundFields({ $typeName: 'payments.deposit.v1.DepositByLocalCardRequest', token: 'tok_x', amountUnits: 100n, currency: 'USD', preOrderToken: '', userId: '' } as never, blank)).toEqual([]);
  });

  it('binds list_events and list_timeline to what their readers read, defaults included', () => {
    const events = body('{"service":"list_events","after":"12","limit":5,"type":"wallet_transfer.completed","subject":"TRF1"}');
    const query = (fields: Record<string, unknown>) => create(EventsQuerySchema, { ...readListEvents(events), ...fields });
    expect(unboundFields(query({}), events)).toEqual([]);
    expect(unboundFields(query({ after: 0n, subject: 'TRF2' }), events)).toEqual(['after', 'subject']);
    const bare = body('{"service":"list_events"}');
    expect(unboundFields(create(EventsQuerySchema, readListEvents(bare)), bare)).toEqual([]);
    // A seq past 2^53 is read exactly on both sides.
    const far = body('{"service":"list_events","after":9007199254740993}');
    expect(unboundFields(create(EventsQuerySchema, readListEvents(far)), far)).toEqual([]);
    expect(unboundFields(create(EventsQuerySchema, { ...readListEvents(far), after: 9007199254740992n }), far)).toEqual(['after']);
    const timeline = body('{"service":"list_timeline","reference":"TRF1"}');
    const typed = create(GetPaymentTimelineRequestSchema, readListTimeline(timeline));
    expect(unboundFields(typed, timeline)).toEqual([]);
    expect(unboundFields(create(GetPaymentTimelineRequestSchema, { ...readListTimeline(timeline), reference: 'TRF2' }), timeline)).toEqual(['reference']);
    expect(unboundFields(typed, { ...timeline, service: 'list_events' })).toEqual(['service']);
  });

  it('throws for a request type without a binding (a programming error, never a merchant answer)', () => {
    expect(() => unboundFields({ $typeName: 'payments.wallet.v1.NoSuchRequest' }, {})).toThrow(/no signed-body binding/);
  });
});
