/**
 * Connect clients of the platform services, as the façade and the admin CLI use them (HTTP/2 h2c, Connect
 * protocol). The façade reaches the platform only through these.
 */
import { createClient, type Client, type Transport } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { HealthService } from '../gen/payments/health/v1/health_pb';
import { LedgerService } from '../gen/payments/ledger/v1/ledger_pb';
import { TransferService } from '../gen/payments/transfer/v1/transfer_pb';
import { PayinService } from '../gen/payments/payin/v1/payin_pb';
import { WalletService } from '../gen/payments/wallet/v1/wallet_pb';
import { AdminService } from '../gen/payments/admin/v1/admin_pb';
import { InstrumentService } from '../gen/payments/instrument/v1/instrument_pb';
import { DepositService } from '../gen/payments/deposit/v1/deposit_pb';

export interface PlatformClients {
  health: Client<typeof HealthService>;
  ledger: Client<typeof LedgerService>;
  transfer: Client<typeof TransferService>;
  payin: Client<typeof PayinService>;
  wallet: Client<typeof WalletService>;
  admin: Client<typeof AdminService>;
  instrument: Client<typeof InstrumentService>;
  deposit: Client<typeof DepositService>;
}

/**
 * @param rpc base URL of the RPC server, e.g. http://127.0.0.1:8080 (Connect over HTTP/2 h2c, one reused session),
 *            or a transport (`createInProcessTransport` when the api role runs in this process)
 */
export function createPlatformClients(rpc: string | Transport, options: { httpVersion?: '1.1' | '2' } = {}): PlatformClients {
  const transport = typeof rpc === 'string' ? createConnectTransport({ baseUrl: rpc, httpVersion: options.httpVersion ?? '2' }) : rpc;
  return {
    health: createClient(HealthService, transport),
    ledger: createClient(LedgerService, transport),
    transfer: createClient(TransferService, transport),
    payin: createClient(PayinService, transport),
    wallet: createClient(WalletService, transport),
    admin: createClient(AdminService, transport),
    instrument: createClient(InstrumentService, transport),
    deposit: createClient(DepositService, transport),
  };
}
