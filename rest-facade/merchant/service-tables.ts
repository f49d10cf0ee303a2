/**
 * Every /do-action service table of Area C, merged in order (a name defined twice is a start-up error).
 * To add services, export a `MerchantServiceTable` from your own file and append it here.
 */
import { coreMerchantServices, type MerchantServiceTable } from './wallet-services';
import { depositMerchantServices } from './deposit-services';
import { instrumentMerchantServices } from './instrument-services';

export const MERCHANT_SERVICE_TABLES: MerchantServiceTable[] = [coreMerchantServices, depositMerchantServices, instrumentMerchantServices];
