/** Shared validation helpers of the onboarding records. */
import { createPublicKey } from 'node:crypto';
import { invalidFields, reasonError, type DomainError } from '../errors';
import { ONBOARDING_REASONS, type OnboardingReason } from './reasons';

/** Postgres unique-violation code. */
export const UNIQUE_VIOLATION = '23505';

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const pgError = error as { code?: string; constraint?: string };
  return pgError?.code === UNIQUE_VIOLATION && (constraint === undefined || pgError.constraint === constraint);
}

/**
 * Parses an RSA public key (SPKI or PKCS#1 PEM) of 2048 bits or more (platform decisions §6) and returns it as SPKI PEM.
 * @throws DomainError invalid_argument INVALID_PUBLIC_KEY on `field`
 */
export function normalizeRsaPublicKey(pem: string, field = 'public_key_pem'): string {
  let key;
  try {
    key = createPublicKey(pem);
  } catch {
    throw invalidFields({ [field]: ['must be an RSA public key in PEM form'] }, ONBOARDING_REASONS, 'INVALID_PUBLIC_KEY');
  }
  if (key.asymmetricKeyType !== 'rsa') throw invalidFields({ [field]: ['must be an RSA public key'] }, ONBOARDING_REASONS, 'INVALID_PUBLIC_KEY');
  if ((key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) {
    throw invalidFields({ [field]: ['must be an RSA key of 2048 bits or more'] }, ONBOARDING_REASONS, 'INVALID_PUBLIC_KEY');
  }
  return key.export({ type: 'spki', format: 'pem' }) as string;
}

/** A required, trimmed name of at most `max` characters. */
export function requireText(value: string | undefined, field: string, max = 128): string {
  const text = (value ?? '').trim();
  if (!text) throw invalidFields({ [field]: [`${field} is required`] });
  if (text.length > max) throw invalidFields({ [field]: [`${field} must be at most ${max} characters`] });
  return text;
}

/** An onboarding record that does not exist: `reason` of ONBOARDING_REASONS, `what` names it in the detail. */
export function notFound<R extends OnboardingReason>(reason: R, what: string): DomainError<R> {
  return reasonError(ONBOARDING_REASONS, reason, `${what} not found`);
}
