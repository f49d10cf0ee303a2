/**
 * create_user and update_user (interface "Area C", "User record"): a merchant's own users, created and updated
 * through onboarding (which opens the user's wallet), answered as the interface's user record.
 */
import type { HandlerContext } from '@connectrpc/connect';
import { invalidFields, reasonError } from '../../errors';
import { problem } from '../../field-problems';
import type { CreateUserRequest, UpdateUserRequest } from '../../gen/payments/wallet/v1/wallet_pb';
import { merchantUser } from '../../merchant-users';
import { createUser, findUserByPhone, updateUser, type User } from '../../onboarding';
import type { PlatformDeps } from '../../platform-deps';
import { phoneOrFail, walletCurrency } from './checks';
import { WALLET_REASONS } from './contract';

/** `YYYY-MM-DD HH:MM:SS` in UTC (interface "User record"). */
export function formatDateTime(date: Date): string {
  return date.toISOString().slice(0, 19).replace('T', ' ');
}

/** The interface's user record plus user_token and wallet_ref (a column left empty is absent). */
export function userRecord(user: User) {
  const { email, phone_number, gender, address, birthday } = user;
  return {
    id: BigInt(user.id), avatar: user.avatar, currency: user.currency, userToken: user.user_token, walletRef: user.wallet_ref,
    firstName: user.first_name, lastName: user.last_name, fullName: user.full_name,
    createdAt: formatDateTime(user.created_at), updatedAt: formatDateTime(user.updated_at),
    email: email ?? undefined, phoneNumber: phone_number ?? undefined, gender: gender ?? undefined, address: address ?? undefined, birthday: birthday ?? undefined,
  };
}

/** The profile fields create_user and update_user both give onboarding. */
function profileOf(request: CreateUserRequest | UpdateUserRequest) {
  const { firstName: first_name, lastName: last_name, address, birthday, gender, description } = request;
  return { first_name, last_name, address, birthday, gender, description };
}

/**
 * create_user for the merchant the request proves: one of phone_number and email is required.
 * @throws DomainError VALIDATION_FAILED, DUPLICATE_PHONE_NUMBER, DUPLICATE_EMAIL
 */
export async function createMerchantUser(deps: PlatformDeps, request: CreateUserRequest, context: HandlerContext) {
  const { merchantId } = await deps.merchantAuth.requireMerchant(request, context);
  if (!request.phoneNumber && !request.email) {
    throw invalidFields({ phone_number: [problem('required_without', 'phone_number', 'email')], email: [problem('required_without', 'email', 'phone_number')] });
  }
  const user = await createUser(deps, {
    ...profileOf(request),
    phone_number: phoneOrFail(request.phoneNumber),
    email: request.email || undefined,
    currency: walletCurrency(request.currency),
    merchant_id: merchantId,
  });
  return { user: userRecord(user) };
}

/**
 * The user an update_user names: `user_id` when sent, else the merchant's user with this phone number.
 * @throws DomainError USER_NOT_FOUND (on user_id, or on phone_number)
 */
async function userToUpdate(deps: PlatformDeps, merchantId: string, userId: string, phone: string | undefined): Promise<string> {
  if (userId) {
    await merchantUser(deps.database, merchantId, userId, 'user_id');
    return userId;
  }
  const found = phone ? await findUserByPhone(deps.database, phone) : undefined;
  if (!found || found.merchant_id !== merchantId) throw reasonError(WALLET_REASONS, 'USER_NOT_FOUND', 'user not found', { phone_number: [problem('not_found')] });
  return found.id;
}

/**
 * update_user for the merchant the request proves: the given fields of one of its users.
 * @throws DomainError VALIDATION_FAILED, USER_NOT_FOUND, DUPLICATE_PHONE_NUMBER, DUPLICATE_EMAIL
 */
export async function updateMerchantUser(deps: PlatformDeps, request: UpdateUserRequest, context: HandlerContext) {
  const { merchantId } = await deps.merchantAuth.requireMerchant(request, context);
  walletCurrency(request.currency);
  const phone = phoneOrFail(request.phoneNumber);
  const user = await updateUser(deps, {
    ...profileOf(request),
    user_id: await userToUpdate(deps, merchantId, request.userId, phone),
    merchant_id: merchantId,
    phone_number: phone,
    email: request.email,
  });
  return { user: userRecord(user) };
}
