/**
 * Connect clients of the platform services, as the façade and the admin CLI use them (HTTP/2 h2c, Connect
 * protocol). The façade reaches the platform only through these.
 */
import { createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { HealthService } from '../gen/payments/health/v1/health_pb';
import { LedgerService } from '../gen/payments/ledger/v1/ledger_pb';
import { TransferService } from '../gen/payments/transfer/v1/transfer_pb';
import { PayinService } from '../gen/payments/payin/v1/payin_pb';
import { WalletService } from '../gen/payments/wallet/v1/wallet_pb';
import { AdminService } from '../gen/payments/admin/v1/admin_pb';

export interface PlatformClients {
  health: Client<typeof HealthService>;
  ledger: Client<typeof LedgerService>;
  transfer: Client<typeof TransferService>;
  payin: Client<typeof PayinService>;
  wallet: Client<typeof WalletService>;
  admin: Client<typeof AdminService>;
}

/** @param rpcUrl base URL of the RPC server, e.g. http://127.0.0.1:8080 */
export function createPlatformClients(rpcUrl: string, options: { httpVersion?: '1.1' | '2' } = {}): PlatformClients {
  const transport = createConnectTransport({ baseUrl: rpcUrl, httpVersion: options.httpVersion ?? '2' });
  return {
    health: createClient(HealthService, transport),
    ledger: createClient(LedgerService, transport),
    transfer: createClient(TransferService, transport),
    payin: createClient(PayinService, transport),
    wallet: createClient(WalletService, transport),
    admin: createClient(AdminService, transport),
  };
}
