/**
 * The state every façade request carries (`ctx.state`), set by the app (./app.ts) before any area router runs. A
 * module of its own so the routers and the app's helpers depend on it, never on the app that mounts them.
 */
import type Koa from 'koa';
import type { Config } from '../src/config';
import type { Logger } from '../src/logger';
import type { PlatformClients } from '../src/rpc/clients';

export interface FacadeState {
  requestId: string;
  logger: Logger;
  /** The request body as received (UTF-8), for signature checks and lossless JSON parsing. */
  rawBody: string;
  clients: PlatformClients;
  config: Config;
}

export type FacadeContext = Koa.ParameterizedContext<FacadeState>;
