/**
 * The three area routers (Areas A, B and C), each mounted under its configured prefix (platform decisions §1), and the
 * merchant dashboard (/dashboard).
 */
import type { Config } from '../src/config';
import { messagePage } from './views/html';
import { faultPage, notFoundPage } from './views/deposit-pages';
import type { AreaRouter } from './app';
import { dashboardArea } from './dashboard/router';
import { areaCEdgeError } from './merchant/contract';
import { merchantRouter } from './merchant/router';
import { areaAEdgeError } from './partner/contract';
import { partnerRouter } from './partner/router';
import { areaBEdgeError } from './payin/contract';
import { payinRouter } from './payin/router';

/** Area C's hosted pages (browsers): their errors are HTML pages. */
const AREA_C_PAGES = /^\/(pre-order|visa-master|instruments)(\/|$)/;

function areaCPageError(status: 404 | 405 | 413 | 500 | 503): string {
  if (status === 404) return notFoundPage();
  if (status === 405) return messagePage('Not allowed', 'This page cannot be used this way.');
  if (status === 413) return messagePage('Too large', 'The form sent is too large.');
  if (status === 503) return messagePage('Busy', 'The service is busy. Please try again in a moment.');
  return faultPage();
}

export function createAreaRouters(config: Config): AreaRouter[] {
  return [
    { prefix: config.PARTNER_PREFIX, router: partnerRouter(), paths: /^\/partnerapi(\/|$)/, edge: areaAEdgeError },
    { prefix: config.PAYIN_PREFIX, router: payinRouter(), paths: /^\/api\/v1(\/|$)/, edge: areaBEdgeError },
    {
      prefix: config.MERCHANT_PREFIX,
      router: merchantRouter(),
      paths: /^\/(login|do-action|pre-order|visa-master|instruments)(\/|$)/,
      edge: areaCEdgeError,
      pages: AREA_C_PAGES,
      pageEdge: areaCPageError,
    },
    dashboardArea(),
  ];
}
