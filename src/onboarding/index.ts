/** Onboarding: partners, merchants, users and their credentials; the AdminService (docs/onboarding.md). */
export * from './partners';
export * from './merchants';
export * from './users';
export { createAdminService } from './admin-service';
export { ensureDemoData, DEMO_SETTING_KEY } from './demo';
