/**
 * The shape of a merchant record, a leaf module: the deps every service receives (src/platform-deps.ts) name it
 * through the merchant authentication, and onboarding's functions take those deps, so it cannot live beside them.
 */

export type MerchantStatus = 'active' | 'suspended';

export interface Merchant {
  /** merchant_id */
  id: string;
  name: string;
  status: MerchantStatus;
  callback_url: string;
  /** default X-Signature */
  signature_header: string;
  /** decimal text such as "1.0" */
  payin_fee_percent: string;
  /** The merchant's RSA public key (SPKI PEM), verifies Area C request signatures. */
  public_key_pem: string;
  api_user_name: string;
  created_at: Date;
}
