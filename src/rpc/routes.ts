/** Every Connect route of the platform, registered in one place. */
import type { ConnectRouter } from '@connectrpc/connect';
import { HealthService } from '../gen/payments/health/v1/health_pb';
import { LedgerService } from '../gen/payments/ledger/v1/ledger_pb';
import { TransferService } from '../gen/payments/transfer/v1/transfer_pb';
import { PayinService } from '../gen/payments/payin/v1/payin_pb';
import type { PlatformServices } from '../platform';
import { WalletService } from '../gen/payments/wallet/v1/wallet_pb';
import { AdminService } from '../gen/payments/admin/v1/admin_pb';
import { InstrumentService } from '../gen/payments/instrument/v1/instrument_pb';
import { DepositService } from '../gen/payments/deposit/v1/deposit_pb';

export function createRoutes(services: PlatformServices): (router: ConnectRouter) => void {
  return (router) => {
    router.service(HealthService, services.health);
    router.service(LedgerService, services.ledger);
    router.service(TransferService, services.transfer);
    router.service(PayinService, services.payin);
    router.service(WalletService, services.wallet);
    router.service(AdminService, services.admin);
    router.service(InstrumentService, services.instrument);
    router.service(DepositService, services.deposit);
  };
}
