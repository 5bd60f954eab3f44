import type { AnnouncedTags } from '../db/announced-cache.ts';

/**
 * Where the database announces a change of a bucket that the S3 endpoint's cache of served
 * buckets depends on (migrations 1080 and 1081): its platform state, or its row in the store
 * other than usage.
 */
export const BUCKET_CHANNEL = 'buckets_changed';

/** The tag of a bucket's entries, as the announcements name it. */
export const bucketTag = (bucketId: string): string => `bucket:${bucketId}`;

/** What an announcement names: the one bucket that changed; anything else forgets every bucket. */
export const bucketTagsOf: AnnouncedTags = (payload) => (/^bucket:[0-9a-f-]+$/.test(payload) ? [payload] : undefined);
