/**
 * C1 login and the per-call authentication of the /do-action route (interface "Authentication / Area C", platform
 * decisions §7): a signed login opens a session; an action the façade answers itself is authenticated and counted
 * like any other.
 */
import type { HandlerContext } from '@connectrpc/connect';
import { DomainError, reasonError } from '../../errors';
import type { AuthenticateActionRequest, LoginRequest } from '../../gen/payments/wallet/v1/wallet_pb';
import { MERCHANT_AUTH_REASONS, openSession } from '../../merchant-auth';
import { merchantApiUser, verifyMerchantApiLogin, type Merchant } from '../../onboarding';
import type { PlatformDeps } from '../../platform-deps';
import { problem } from '../../field-problems';
import { clientAddressOf } from '../../rpc/client-address';

/**
 * The merchant of a signed login whose API user's password is right. Failed logins are counted per merchant-id
 * header and per client address (src/abuse); a fault withdraws the attempt.
 * @throws DomainError MERCHANT_UNAUTHENTICATED, INVALID_SIGNATURE, LOGIN_TIMESTAMP_INVALID, LOGIN_REPLAYED,
 *   LOGIN_FAILED, RATE_LIMITED
 */
async function loggedInMerchant(deps: PlatformDeps, request: LoginRequest, context: HandlerContext): Promise<Merchant> {
  const attempt = await deps.abuse.beginAttempt('merchant_login', request.envelope?.merchantId ?? '', clientAddressOf(context));
  let merchant: Merchant;
  try {
    merchant = await deps.merchantAuth.authenticateLogin(request);
    const merchantId = merchant.id;
    const ok = await deps.abuse.hashing(
      () => verifyMerchantApiLogin(deps.database, merchantId, { user_name: request.userName, password: request.password }),
      context.signal,
    );
    if (!ok) throw reasonError(MERCHANT_AUTH_REASONS, 'LOGIN_FAILED', 'login failed', { user_name_password: [problem('login')] });
  } catch (error) {
    await (error instanceof DomainError && error.kind !== 'internal' ? attempt.failed() : attempt.withdrawn());
    throw error;
  }
  await attempt.succeeded();
  return merchant;
}

/**
 * C1 (interface "Area C": user_name and password). A signed body that carries the optional `timestamp` must lie
 * within MERCHANT_LOGIN_WINDOW_SECONDS and is accepted once (src/merchant-auth `authenticateLogin`), so such a captured
 * login opens no session later; one without it is the interface's login and opens a session each time its signature
 * and credentials verify. Past the limit of failed logins
 * every attempt, right or wrong, answers RATE_LIMITED until the window ends.
 * @returns the session token (MERCHANT_SESSION_TTL_SECONDS) and the merchant's API user with its USD balance
 * @throws what `loggedInMerchant` throws
 */
export async function login(deps: PlatformDeps, request: LoginRequest, context: HandlerContext) {
  const merchant = await loggedInMerchant(deps, request, context);
  const ttl = deps.config.MERCHANT_SESSION_TTL_SECONDS;
  const token = await openSession(deps.database, merchant.id, ttl);
  const profile = await merchantApiUser(deps.database, merchant.id);
  const account = await deps.ledger.findAccount({ owner_type: 'merchant', owner_id: merchant.id, currency: 'USD', kind: 'wallet' });
  return {
    token,
    expiresInSeconds: BigInt(ttl),
    user: {
      id: BigInt(profile.id),
      avatar: profile.avatar,
      fkSoc: BigInt(profile.fk_soc),
      timeZone: profile.time_zone ?? undefined,
      fullName: merchant.name,
      balanceUnits: account?.available_units ?? 0n,
      walletRef: profile.wallet_ref,
      walletId: BigInt(profile.wallet_id),
      currency: 'USD',
    },
  };
}

/** An action the façade answers itself (no or unknown service, unreadable fields): counted like any other. */
export async function authenticateAction(deps: PlatformDeps, request: AuthenticateActionRequest): Promise<{ merchantId: string }> {
  const { merchantId } = await deps.merchantAuth.authenticateAction(request.envelope, request.sessionToken);
  await deps.abuse.consumeRequest(`merchant:${merchantId}`);
  return { merchantId };
}
