import type { AnnouncedTags } from '../db/announced-cache.ts';

/**
 * Where the database announces a change of a credential (migrations 0800 and 0990). Every cache of
 * credentials listens here, in whichever process or thread it lives (the API's CredentialCache,
 * the S3 endpoint's keys): a revocation waits until each of them has forgotten the credential.
 */
export const CREDENTIAL_CHANNEL = 'credentials_changed';

/**
 * What an announcement names (migration 0990_credential_change_tags.sql): the one credential that
 * changed, `api_token:<id>`, `member:<id>` (every key of that member) or `s3_access_key:<id>`.
 * Anything else (an older trigger's table name) forgets every credential.
 */
export const credentialTagsOf: AnnouncedTags = (payload) => (/^[a-z0-9_]+:[^\s:]+$/.test(payload) ? [payload] : undefined);
