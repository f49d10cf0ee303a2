/** Onboarding: partners, merchants (and their API user), users (a merchant's own among them) and their credentials (docs/onboarding.md); the AdminService that calls them is src/admin. */
export * from './partners';
export * from './merchants';
export * from './users';
export { ensureDemoData, DEMO_SETTING_KEY } from './demo';
