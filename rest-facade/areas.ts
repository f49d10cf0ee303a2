/** The three area routers (Areas A, B and C), each mounted under its configured prefix (platform decisions §1). */
import type { Config } from '../src/config';
import type { AreaRouter } from './app';

export function createAreaRouters(_config: Config): AreaRouter[] {
  return [];
}
