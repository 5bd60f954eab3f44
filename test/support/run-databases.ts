// The names of a test PostgreSQL's databases: the run's migrated template (global-setup.ts makes
// it; server.ts copies it), and the address of any database beside the administrative one. A
// module of its own: the global setup runs outside the test workers and imports nothing of theirs.
export const MIGRATED_TEMPLATE = 'cloud_platform_migrated';

/** The address of database `name` on the server that `adminUrl` (its `postgres` database) names. */
export const databaseUrlBeside = (adminUrl: string, name: string): string => adminUrl.replace(/\/postgres$/, `/${name}`);
