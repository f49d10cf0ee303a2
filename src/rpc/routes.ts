/** Every Connect route of the platform, registered in one place. */
import type { ConnectRouter } from '@connectrpc/connect';
import { HealthService } from '../gen/payments/health/v1/health_pb';
import type { PlatformServices } from '../platform';

export function createRoutes(services: PlatformServices): (router: ConnectRouter) => void {
  return (router) => {
    router.service(HealthService, services.health);
  };
}
