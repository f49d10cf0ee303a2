/** The platform's roles (platform decisions §1): what `payments serve` runs and `payments health` probes. */
export const ROLES = ['api', 'facade', 'worker'] as const;
export type Role = (typeof ROLES)[number];

/** Parses "api,facade,worker"; throws on an unknown role. */
export function parseRoles(text: string): Role[] {
  const roles = text.split(',').map((role) => role.trim()).filter(Boolean);
  for (const role of roles) {
    if (!(ROLES as readonly string[]).includes(role)) throw new Error(`unknown role "${role}" (roles: ${ROLES.join(', ')})`);
  }
  if (roles.length === 0) throw new Error('no role given');
  return [...new Set(roles)] as Role[];
}
