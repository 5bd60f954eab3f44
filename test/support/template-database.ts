// The name of the test run's migrated template database (global-setup.ts makes it; server.ts
// copies it). A module of its own: the global setup runs outside the test workers and imports
// nothing of theirs.
export const MIGRATED_TEMPLATE = 'cloud_platform_migrated';
