/**
 * Each area's field limits (the input gate of its façade contract) against the columns that store the fields: a
 * column narrower than its documented field would turn valid input into a database error, so it fails here.
 */
import { createDatabase, type Knex } from '../../src/db/knex';
import { NOTIFICATION_LIMITS } from '../../src/flows/payin/contract';
import { FIELD_MAX_LENGTH } from '../../rest-facade/merchant/contract';
import { HOLDER_NAME_MAX } from '../../src/instruments/store';
import { AREA_A_LIMITS } from '../../src/flows/pre-transfer/area-a';
import { PAYIN_LIMITS } from '../../rest-facade/payin/contract';
import { createTestDatabase } from '../support/platform';

/** [area, field, its limit in characters, table, column] */
const FIELDS: Array<[string, string, number, string, string]> = [
  ['A', 'out_trade_no', AREA_A_LIMITS.out_trade_no, 'pre_transfers', 'out_trade_no'],
  ['A', 'receiver_id', AREA_A_LIMITS.receiver_id, 'pre_transfers', 'receiver_id'],
  ['A', 'sender_name', AREA_A_LIMITS.sender_name, 'pre_transfers', 'sender_name'],
  ['A', 'receiver_name', AREA_A_LIMITS.receiver_name, 'pre_transfers', 'receiver_name'],
  ['A', 'pre_transfer_id', AREA_A_LIMITS.pre_transfer_id, 'pre_transfers', 'id'],
  ['A', 'partner_transaction_id', AREA_A_LIMITS.partner_transaction_id, 'pre_transfers', 'partner_transaction_id'],
  ['A', 'fund_transfer_id', AREA_A_LIMITS.fund_transfer_id, 'pre_transfers', 'fund_transfer_id'],
  ['B', 'out_trade_no', PAYIN_LIMITS.outTradeNoMaxLength, 'payins', 'out_trade_no'],
  ['B', 'memo', PAYIN_LIMITS.memoMaxLength, 'payins', 'memo'],
  ['B', 'notification invoice_reference', NOTIFICATION_LIMITS.invoice_reference, 'upstream_notifications', 'invoice_reference'],
  ['B', 'notification trx_ref', NOTIFICATION_LIMITS.trx_ref, 'upstream_notifications', 'trx_ref'],
  ['B', 'notification trx_ref (on the payin)', NOTIFICATION_LIMITS.trx_ref, 'payins', 'trx_ref'],
  ['C', 'out_trade_no', FIELD_MAX_LENGTH.out_trade_no!, 'preorders', 'out_trade_no'],
  ['C', 'seller_code', FIELD_MAX_LENGTH.seller_code!, 'preorders', 'seller_code'],
  ['C', 'description', FIELD_MAX_LENGTH.description!, 'preorders', 'description'],
  ['C', 'redirect_url', FIELD_MAX_LENGTH.redirect_url!, 'preorders', 'redirect_url'],
  ['C', 'call_back_url', FIELD_MAX_LENGTH.call_back_url!, 'preorders', 'call_back_url'],
  ['C', 'first_name', FIELD_MAX_LENGTH.first_name!, 'users', 'first_name'],
  ['C', 'last_name', FIELD_MAX_LENGTH.last_name!, 'users', 'last_name'],
  ['C', 'address', FIELD_MAX_LENGTH.address!, 'users', 'address'],
  ['C', 'email', FIELD_MAX_LENGTH.email!, 'users', 'email'],
  ['C', 'gender', FIELD_MAX_LENGTH.gender!, 'users', 'gender'],
  ['C', 'reference (block_money)', FIELD_MAX_LENGTH.reference!, 'blocked_money', 'reference'],
  ['C', 'holder_name', HOLDER_NAME_MAX, 'instruments', 'holder_name'],
];

describe('field limits against column widths', () => {
  let database: Knex;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const created = await createTestDatabase();
    drop = created.drop;
    database = createDatabase(created.url, 2);
  });
  afterAll(async () => {
    await database.destroy();
    await drop();
  });

  it('stores every documented field in a column at least as wide (text columns are unbounded)', async () => {
    const columns = await database('information_schema.columns')
      .where({ table_schema: 'public' })
      .select('table_name', 'column_name', 'data_type', 'character_maximum_length');
    const problems = FIELDS.flatMap(([area, field, limit, table, column]) => {
      const found = columns.find((row) => row.table_name === table && row.column_name === column);
      if (!found) return [`Area ${area} ${field}: no column ${table}.${column}`];
      const width = found.character_maximum_length === null ? Infinity : Number(found.character_maximum_length);
      return width >= limit ? [] : [`Area ${area} ${field}: limit ${limit} but ${table}.${column} holds ${width}`];
    });
    expect(problems).toEqual([]);
  });
});
