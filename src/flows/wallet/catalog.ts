/**
 * Area C reference data: the fee schedule by channel code and the exchange rates (list_fees), and the bank list
 * (list_banks). Stored in PostgreSQL (migration 006_wallet) and editable by an operator with `setFeeChannel` /
 * `setExchangeRate` (or plain SQL on `fee_schedule` / `exchange_rates`).
 */
import type { Knex } from 'knex';
import { LosslessNumber, parseJsonLossless, stringifyJson } from '../../money';

/** `{FEE: {channel: {...}}, EXCHANGE_RATE: {USD_KHR, KHR_USD}}` as JSON text (exact numbers). */
export async function listFees(database: Knex): Promise<{ feeJson: string; exchangeRateJson: string }> {
  const [feeRows, rateRows] = await Promise.all([
    database('fee_schedule').select('channel_code', 'fee').orderBy('channel_code'),
    database('exchange_rates').select('pair', 'rate').orderBy('pair'),
  ]);
  const fee: Record<string, unknown> = {};
  for (const row of feeRows as Array<{ channel_code: string; fee: unknown }>) fee[row.channel_code] = row.fee;
  const rates: Record<string, LosslessNumber> = {};
  for (const row of rateRows as Array<{ pair: string; rate: string }>) {
    // numeric comes back as text: trim trailing zeros, keep it exact.
    const text = row.rate.includes('.') ? row.rate.replace(/\.?0+$/, '') : row.rate;
    rates[row.pair] = new LosslessNumber(text || '0');
  }
  return { feeJson: JSON.stringify(fee), exchangeRateJson: stringifyJson(rates) };
}

/** Operator: sets (or replaces) a channel's fee object. `fee` is JSON text of an object. */
export async function setFeeChannel(database: Knex, channelCode: string, feeJson: string): Promise<void> {
  const value = parseJsonLossless(feeJson);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('fee must be a JSON object');
  await database('fee_schedule')
    .insert({ channel_code: channelCode, fee: feeJson, updated_at: database.fn.now() })
    .onConflict('channel_code')
    .merge();
}

/** Operator: sets an exchange rate ("USD_KHR", "KHR_USD") as decimal text. */
export async function setExchangeRate(database: Knex, pair: string, rate: string): Promise<void> {
  if (!/^\d+(\.\d+)?$/.test(rate)) throw new Error('rate must be a decimal number');
  await database('exchange_rates').insert({ pair, rate, updated_at: database.fn.now() }).onConflict('pair').merge();
}

export interface BankPage {
  currentPage: number;
  data: Array<{ id: bigint; name: string; region: string; city: string; logo: string }>;
  from?: number;
  lastPage: number;
  perPage: number;
  to?: number;
  total: number;
}

/** One page of the bank list ordered by id; `from`/`to` are 1-based positions, absent on an empty page. */
export async function listBanks(database: Knex, page: number, perPage: number): Promise<BankPage> {
  const [{ count }] = (await database('banks').count({ count: '*' })) as Array<{ count: string | number | bigint }>;
  const total = Number(count);
  const rows = (await database('banks')
    .select('id', 'name', 'region', 'city', 'logo')
    .orderBy('id')
    .limit(perPage)
    .offset((page - 1) * perPage)) as BankPage['data'];
  const first = (page - 1) * perPage + 1;
  return {
    currentPage: page,
    data: rows,
    from: rows.length > 0 ? first : undefined,
    lastPage: Math.max(1, Math.ceil(total / perPage)),
    perPage,
    to: rows.length > 0 ? first + rows.length - 1 : undefined,
    total,
  };
}
