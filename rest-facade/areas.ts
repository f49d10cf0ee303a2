/** The three area routers (Areas A, B and C), each mounted under its configured prefix (platform decisions §1). */
import type { Config } from '../src/config';
import type { AreaRouter } from './app';
import { partnerRouter } from './partner/router';
import { payinRouter } from './payin/router';
import { merchantRouter } from './merchant/router';

export function createAreaRouters(_config: Config): AreaRouter[] {
  return [{ prefix: _config.PARTNER_PREFIX, router: partnerRouter() }, { prefix: _config.PAYIN_PREFIX, router: payinRouter() }, { prefix: _config.MERCHANT_PREFIX, router: merchantRouter() }];
}
