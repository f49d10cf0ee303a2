/** Every Connect route of the platform, registered in one place: one per entry of `PLATFORM_SERVICES`. */
import type { ConnectRouter } from '@connectrpc/connect';
import { PLATFORM_SERVICE_NAMES, PLATFORM_SERVICES, type PlatformServiceName, type PlatformServices } from './services';

function registerService<Name extends PlatformServiceName>(router: ConnectRouter, name: Name, services: PlatformServices): void {
  router.service(PLATFORM_SERVICES[name], services[name]);
}

export function createRoutes(services: PlatformServices): (router: ConnectRouter) => void {
  return (router) => {
    for (const name of PLATFORM_SERVICE_NAMES) registerService(router, name, services);
  };
}
