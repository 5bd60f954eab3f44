import { randomIdBytes } from '../../core/random-ids.ts';
import { Readable, type Transform, type Writable } from 'node:stream';
import { withTransaction, type PoolClient, type Queryable } from '../../db/pool.ts';
import { StoreRefusal } from './refusals.ts';
import { assertDeleteCondition, assertWriteCondition, type DeleteCondition, type WriteCondition } from './conditions.ts';
import { assertMayDelete, type VersionLock } from './object-lock.ts';
import { addUsage, lockForWrite } from './quota.ts';
import {
  bucketOf,
  num,
  versionOf,
  type Segment,
  type StoredBucket,
  type StoredVersion,
  type Tag,
  type VersionEncryption,
  type AclGrant,
} from './rows.ts';
import { openRange, type WrappingKey } from './sealing.ts';
import { changeBucketRow, setBucketColumn } from './bucket-settings.ts';
import type { AuditStatement } from './s3/platform-port.ts';
import { assertCommitFits, blobWrite, dropGarbage, markGarbage, streamedWrite, type BlobSource, type StoreContext } from './write-path.ts';
import type { Batch } from './org-write-groups.ts';

/** What a new version carries besides its bytes. */
export interface VersionAttributes {
  contentType: string | null;
  /** User metadata (x-amz-meta-*) and stored representation headers, lower-case names. */
  headers: Record<string, string>;
  /** The object's tags (x-amz-tagging), in key order. */
  tags?: Tag[];
  /** The ACL the write gives (x-amz-acl, x-amz-grant-*); none: the owner's FULL_CONTROL. */
  acl?: AclGrant[] | null;
}

/** How a write seals its bytes at rest: whose key wraps the data key, and what the version records. */
export interface SealingRequest {
  wrapping: WrappingKey;
  record: VersionEncryption;
}

export interface PutRequest extends VersionAttributes {
  orgId: string;
  bucketId: string;
  key: string;
  size: number;
  /** `size` bounds the body rather than giving its length (see WriteSpec.sizeIsLimit). */
  sizeIsLimit?: boolean;
  /** Sealed at rest when set (SSE-S3, SSE-C). */
  sealing?: SealingRequest;
  /** The new version's retention and legal hold (a bucket with object lock). */
  lock?: VersionLock;
  /**
   * The bytes (see BlobSource). A shared segment keeps its sealing: `sealing` then only says what
   * the new version records, and must be of the same kind.
   */
  body: BlobSource;
  transforms: Transform[];
  /** Once the bytes are on disk: the ETag and verified checksums, or a throw (BadDigest). */
  digests(): Promise<{ etag: string; checksums: Record<string, string> }>;
  /** The body comes whether or not it is asked for: a small one is read at once (WriteSpec.readEarly). */
  readEarly?: boolean;
  /** If-Match / If-None-Match, checked as the write commits. */
  condition?: WriteCondition;
}

/** A new S3 version id: opaque, URL-safe. */
export const newVersionId = (): string => randomIdBytes(16).toString('base64url').replace(/[-_]/g, 'x');

const LATEST = `(SELECT max(l.seq) FROM store_versions l WHERE l.bucket_id = v.bucket_id AND l.key = v.key) = v.seq AS is_latest`;

/** The latest version of a key (a delete marker included), as a transaction holding the bucket's lock sees it. */
export async function latestVersion(db: Queryable, bucketId: string, key: string): Promise<StoredVersion | undefined> {
  const { rows } = await db.query<StoredVersion>(
    'SELECT *, true AS is_latest FROM store_versions WHERE bucket_id = $1 AND key = $2 ORDER BY seq DESC LIMIT 1',
    [bucketId, key],
  );
  return rows[0] && versionOf(rows[0]);
}

/** The current version of an unversioned key (what a write replaces), locked by the bucket's lock. */
async function unversionedCurrent(tx: Queryable, bucket: StoredBucket, key: string): Promise<StoredVersion | undefined> {
  if (bucket.versioning) return undefined;
  const { rows } = await tx.query<StoredVersion>(`SELECT * FROM store_versions WHERE bucket_id = $1 AND key = $2 AND version_id = 'null'`, [
    bucket.id,
    key,
  ]);
  return rows[0] && versionOf(rows[0]);
}

/**
 * In a committing transaction: adds a version (replacing the unversioned key's one), checked
 * exactly against the limits, and moves the usage. Returns the version and the blobs it freed.
 */
export async function commitVersion(
  tx: PoolClient,
  locked: Awaited<ReturnType<typeof lockForWrite>>,
  orgId: string,
  key: string,
  version: {
    size: number;
    etag: string;
    checksums: Record<string, string>;
    segments: Segment[];
    attributes: VersionAttributes;
    excludeUpload?: string;
    condition?: WriteCondition;
    encryption?: VersionEncryption | null;
    lock?: VersionLock;
  },
): Promise<{ version: StoredVersion; freed: string[] }> {
  if (version.condition) assertWriteCondition(version.condition, await latestVersion(tx, locked.bucket.id, key));
  const replaced = locked.snapshot?.key === key ? locked.snapshot.current : await unversionedCurrent(tx, locked.bucket, key);
  // Only an unversioned bucket replaces a version, and object lock keeps versioning on: a locked
  // version is never replaced. Checked all the same, as deletes are.
  if (replaced) assertMayDelete(replaced, { bypassGovernance: false, now: new Date() });
  const delta = { bytes: version.size - (replaced?.size_bytes ?? 0), objects: 1 - (replaced ? 1 : 0) };
  await assertCommitFits(tx, locked, orgId, delta, version.excludeUpload ?? null);
  const freed = replaced?.segments.map((segment) => segment.blob) ?? [];
  if (replaced) {
    // The old version goes and its files become garbage, in one statement.
    await tx.query(
      `WITH gone AS (DELETE FROM store_versions WHERE bucket_id = $1 AND key = $2 AND version_id = 'null')
       INSERT INTO store_garbage (blob) SELECT unnest($3::text[]) ON CONFLICT DO NOTHING`,
      [locked.bucket.id, key, freed],
    );
  }
  const versionId = locked.bucket.versioning ? newVersionId() : 'null';
  // The version and the usage it moves, in one statement (the organization's and the bucket's
  // rows are locked by this transaction; the usage of both moves whatever the delta, as addUsage).
  const { rows } = await tx.query<StoredVersion>(
    `WITH org AS (UPDATE store_orgs SET usage_bytes = usage_bytes + $10, usage_objects = usage_objects + $11 WHERE org_id = $12),
          bucket AS (UPDATE store_buckets SET usage_bytes = usage_bytes + $10, usage_objects = usage_objects + $11 WHERE id = $1)
     INSERT INTO store_versions (bucket_id, key, version_id, delete_marker, size_bytes, etag, content_type, headers, checksums, segments, tags,
       encryption, lock_mode, lock_until, legal_hold, acl)
     VALUES ($1, $2, $3, false, $4, $5, $6, $7, $8, $9, $13, $14, $15, $16, $17, $18) RETURNING *`,
    [
      locked.bucket.id,
      key,
      versionId,
      version.size,
      version.etag,
      version.attributes.contentType,
      JSON.stringify(version.attributes.headers),
      JSON.stringify(version.checksums),
      JSON.stringify(version.segments),
      delta.bytes,
      delta.objects,
      orgId,
      JSON.stringify(version.attributes.tags ?? []),
      version.encryption ? JSON.stringify(version.encryption) : null,
      version.lock?.retention?.mode ?? null,
      version.lock?.retention?.until ?? null,
      version.lock?.legalHold ?? false,
      version.attributes.acl ? JSON.stringify(version.attributes.acl) : null,
    ],
  );
  return { version: versionOf(rows[0]!), freed };
}

/** A plain PUT's commit, as store_commit_puts takes it (migrations/1070_store_commit_puts_per_run.sql). */
interface PlainPut {
  org_id: string;
  bucket_id: string;
  key: string;
  /** The write's reservation, released as it commits. */
  release: string;
  version: {
    /** Used when the bucket is versioned; an unversioned bucket's version is 'null'. */
    version_id: string;
    size_bytes: number;
    etag: string;
    content_type: string | null;
    headers: Record<string, string>;
    checksums: Record<string, string>;
    segments: Segment[];
    tags: Tag[];
    encryption: VersionEncryption | null;
    acl: AclGrant[] | null;
  };
}

type CommittedVersion = { version: StoredVersion; freed: string[] };

/**
 * `commitVersion` for versions without a condition or a retention of their own, in one statement
 * for a run of them (store_commit_puts): for each in order, the locks, the release of its
 * reservation, the limits, the version it replaces and the usage. Their refusals are the store's.
 */
const plainPuts: Batch<PlainPut, CommittedVersion> = {
  async run(tx, items) {
    const { rows } = await tx.query<{ outcomes: Array<{ committed: CommittedVersion } | { code: string; message: string }> }>(
      'SELECT store_commit_puts($1, $2) AS outcomes',
      [items[0]!.org_id, JSON.stringify(items)],
    );
    return rows[0]!.outcomes.map((outcome) => {
      if ('code' in outcome) return { ok: false, error: commitRefusal(outcome.code, outcome.message) };
      const { version, freed } = outcome.committed;
      // Read as JSON: timestamps are text there.
      return { ok: true, result: { version: versionOf({ ...version, last_modified: new Date(version.last_modified) }), freed } };
    });
  },
};

/** What a plain PUT's refusal (its SQLSTATE: store_commit_puts) is to the store; another error keeps its code. */
function commitRefusal(code: string, message: string): Error {
  if (code === 'CPB01') return new StoreRefusal('NoSuchBucket', message);
  if (code === 'CPQ01') return new StoreRefusal('QuotaExceeded', message);
  if (code === 'CPL01') return new StoreRefusal('AccessDenied', message);
  // A swept reservation (CPS01) is told by its code, as the database's error would be.
  return Object.assign(new Error(message), { code });
}

interface Piece {
  segment: Segment;
  /** Bytes [start, end] of the segment's (plain) bytes. */
  start: number;
  end: number;
}

/** The parts of a version's segments that hold its bytes [start, end], in order. */
function piecesOf(version: StoredVersion, start: number, end: number): Piece[] {
  const pieces: Piece[] = [];
  let offset = 0;
  for (const segment of version.segments) {
    const from = Math.max(start, offset);
    const to = Math.min(end, offset + segment.size - 1);
    if (from <= to) pieces.push({ segment, start: from - offset, end: to - offset });
    offset += segment.size;
  }
  return pieces;
}

/** A version: the given one, or the key's latest (which may be a delete marker). */
async function versionIn(db: Queryable, bucketId: string, key: string, versionId: string | undefined): Promise<StoredVersion | null> {
  if (versionId === undefined) return (await latestVersion(db, bucketId, key)) ?? null;
  const { rows } = await db.query<StoredVersion>(
    `SELECT v.*, ${LATEST} FROM store_versions v WHERE bucket_id = $1 AND key = $2 AND version_id = $3`,
    [bucketId, key, versionId],
  );
  return rows[0] ? versionOf(rows[0]) : null;
}

export function objectOperations(context: StoreContext) {
  const { pool, blobs, keyring } = context;

  /** A sealed piece's plain bytes, opened with its data key (the customer's key unwraps an SSE-C one). */
  const openedPiece = (piece: Piece, customerKey: Buffer | undefined): Readable => {
    const sealing = piece.segment.sealing!;
    const opened = openRange(keyring.dataKeyOf(sealing, customerKey), piece.segment.size, piece.start, piece.end);
    const file = blobs.read(piece.segment.blob, opened.fileStart, opened.fileEnd);
    // pipe() passes neither errors nor an early end along: the file is closed with its reader.
    file.on('error', (error) => opened.open.destroy(error));
    opened.open.on('close', () => file.destroy());
    return file.pipe(opened.open);
  };

  return {
    /** The organization's bucket of that name, or null (suspended ones included: the caller decides). */
    async bucketNamed(orgId: string, name: string): Promise<StoredBucket | null> {
      const { rows } = await pool.query<StoredBucket>('SELECT * FROM store_buckets WHERE org_id = $1 AND name = $2', [orgId, name]);
      return rows[0] ? bucketOf(rows[0]) : null;
    },

    /** What a bucket holds now, every version and delete marker counted (its running usage). */
    async bucketUsage(bucketId: string): Promise<{ bytes: number; objects: number }> {
      const { rows } = await pool.query<{ usage_bytes: string; usage_objects: string }>(
        'SELECT usage_bytes, usage_objects FROM store_buckets WHERE id = $1',
        [bucketId],
      );
      return { bytes: num(rows[0]?.usage_bytes ?? 0), objects: num(rows[0]?.usage_objects ?? 0) };
    },

    /** Every organization's served-in-the-store bucket of that name (a preflight, which carries no credentials, looks it up so). */
    async bucketsNamed(name: string): Promise<StoredBucket[]> {
      const { rows } = await pool.query<StoredBucket>('SELECT * FROM store_buckets WHERE name = $1 AND NOT suspended', [name]);
      return rows.map(bucketOf);
    },

    /**
     * Other organizations' served buckets of that name that may share themselves with the caller's:
     * those with a policy or ACL grants, or whose `key` has ACL grants (at most 20: a request is
     * served only when exactly one of them allows it). One query, by the buckets' name index and
     * the versions' key index, however many organizations hold the name.
     */
    async bucketsSharedElsewhere(orgId: string, name: string, key: string | undefined): Promise<StoredBucket[]> {
      const { rows } = await pool.query<StoredBucket>(
        `SELECT b.* FROM store_buckets b
         WHERE b.name = $1 AND b.org_id <> $2 AND NOT b.suspended
           AND (b.policy IS NOT NULL OR b.acl IS NOT NULL
                OR ($3::text IS NOT NULL AND EXISTS (SELECT 1 FROM store_versions v WHERE v.bucket_id = b.id AND v.key COLLATE "C" = $3 AND v.acl IS NOT NULL)))
         ORDER BY b.id LIMIT 20`,
        [name, orgId, key ?? null],
      );
      return rows.map(bucketOf);
    },

    async bucketsOf(orgId: string): Promise<StoredBucket[]> {
      const { rows } = await pool.query<StoredBucket>('SELECT * FROM store_buckets WHERE org_id = $1 AND NOT suspended ORDER BY name', [
        orgId,
      ]);
      return rows.map(bucketOf);
    },

    async putObject(request: PutRequest): Promise<StoredVersion> {
      let digests: { etag: string; checksums: Record<string, string> } | undefined;
      const bytes = blobWrite(keyring, request.body, request.sealing?.wrapping);
      const { version, freed } = await streamedWrite(context, {
        orgId: request.orgId,
        bucketId: request.bucketId,
        size: request.size,
        sizeIsLimit: request.sizeIsLimit,
        seal: bytes.seal,
        objects: 1,
        body: bytes.body,
        transforms: request.transforms,
        key: request.key,
        readEarly: request.readEarly,
        replaces: async (tx, locked) => {
          const current =
            locked.snapshot?.key === request.key ? locked.snapshot.current : await unversionedCurrent(tx, locked.bucket, request.key);
          return current ? { bytes: current.size_bytes, objects: 1 } : { bytes: 0, objects: 0 };
        },
        verify: async () => void (digests = await request.digests()),
        // A plain PUT (no condition, no retention of its own) commits with the others next to it.
        batchedCommit:
          request.condition || request.lock
            ? undefined
            : {
                batch: plainPuts,
                item: (release, blob, size) => ({
                  org_id: request.orgId,
                  bucket_id: request.bucketId,
                  key: request.key,
                  release,
                  version: {
                    version_id: newVersionId(),
                    size_bytes: size,
                    etag: digests!.etag,
                    content_type: request.contentType,
                    headers: request.headers,
                    checksums: digests!.checksums,
                    segments: [{ blob, size, ...(bytes.sealing ? { sealing: bytes.sealing } : {}) }],
                    tags: request.tags ?? [],
                    encryption: request.sealing?.record ?? null,
                    acl: request.acl ?? null,
                  },
                }),
              },
        commit: (tx, locked, blob, size) =>
          commitVersion(tx, locked, request.orgId, request.key, {
            size,
            etag: digests!.etag,
            checksums: digests!.checksums,
            segments: [{ blob, size, ...(bytes.sealing ? { sealing: bytes.sealing } : {}) }],
            attributes: request,
            condition: request.condition,
            encryption: request.sealing?.record ?? null,
            lock: request.lock,
          }),
      });
      // The replaced version's files are removed after the answer: their garbage rows committed
      // with the new version, so should this process end first, the sweep removes them. It
      // never rejects.
      void dropGarbage(context, freed);
      return version;
    },

    /** A version: the given one, or the key's latest (which may be a delete marker). */
    version: (bucketId: string, key: string, versionId: string | undefined): Promise<StoredVersion | null> =>
      versionIn(pool, bucketId, key, versionId),

    /**
     * `version`, found by the bucket's name in the organization rather than its id: a read asks
     * this while the S3 endpoint checks that the bucket is served (one round trip in time rather
     * than two). The caller checks that `bucket_id` is the bucket it was given.
     */
    async versionInBucketNamed(orgId: string, name: string, key: string, versionId: string | undefined): Promise<StoredVersion | null> {
      const { rows } =
        versionId === undefined
          ? await pool.query<StoredVersion>(
              `SELECT v.*, true AS is_latest FROM store_versions v JOIN store_buckets b ON b.id = v.bucket_id
               WHERE b.org_id = $1 AND b.name = $2 AND v.key = $3 ORDER BY v.seq DESC LIMIT 1`,
              [orgId, name, key],
            )
          : await pool.query<StoredVersion>(
              `SELECT v.*, ${LATEST} FROM store_versions v JOIN store_buckets b ON b.id = v.bucket_id
               WHERE b.org_id = $1 AND b.name = $2 AND v.key = $3 AND v.version_id = $4`,
              [orgId, name, key, versionId],
            );
      return rows[0] ? versionOf(rows[0]) : null;
    },

    /**
     * Bytes [start, end] of a version, read across its segments in order (opened when sealed:
     * `customerKey` is the SSE-C key of a version sealed with one).
     */
    read(version: StoredVersion, start: number, end: number, customerKey?: Buffer): Readable {
      const pieces = piecesOf(version, start, end);
      async function* chunks() {
        for (const piece of pieces)
          yield* piece.segment.sealing ? openedPiece(piece, customerKey) : blobs.read(piece.segment.blob, piece.start, piece.end);
      }
      return Readable.from(chunks(), { objectMode: false });
    },

    /**
     * Writes bytes [start, end] of a version to a client's response (not ended), through reused
     * buffers (BlobFiles.send) when plain; `onSent` counts the bytes the response took. `pace`,
     * awaited before each piece of bytes goes out, holds them back (the S3 endpoint's admission).
     */
    async send(
      version: StoredVersion,
      start: number,
      end: number,
      out: Writable,
      onSent: (bytes: number) => void,
      { customerKey, pace }: { customerKey?: Buffer; pace?: (bytes: number) => Promise<void> } = {},
    ): Promise<void> {
      for (const piece of piecesOf(version, start, end)) {
        if (!piece.segment.sealing) await blobs.send(piece.segment.blob, piece.start, piece.end, out, onSent, pace);
        else await sendOpened(openedPiece(piece, customerKey), out, onSent, pace);
      }
    },

    /**
     * Counts bytes served to a client of the organization (egress, metered): a row of the egress
     * log, which takes no lock a write holds (0930_store_egress_log.sql); the sweep folds it.
     */
    async recordEgress(orgId: string, bytes: number): Promise<void> {
      if (bytes > 0) await pool.query('INSERT INTO store_egress (org_id, bytes) VALUES ($1, $2)', [orgId, bytes]);
    },

    /**
     * Deletes: with a version id, that version (or marker) for good; without, in a versioned
     * bucket a delete marker is added, in an unversioned one the key goes, and in one whose
     * versioning is suspended the key's `null` version goes and a `null` delete marker takes its
     * place (the versions kept stay). Deletes are never refused by a quota: they are how usage
     * comes back under it. `condition` is checked against the version the delete is about.
     */
    async deleteObject(
      orgId: string,
      bucketId: string,
      key: string,
      versionId: string | undefined,
      options: { bypassGovernance?: boolean; condition?: DeleteCondition } = {},
    ) {
      const outcome = await withTransaction(pool, async (tx) => {
        const locked = await lockForWrite(tx, orgId, bucketId);
        const { bucket } = locked;
        if (options.condition) {
          const target = await versionIn(tx, bucketId, key, versionId);
          assertDeleteCondition(options.condition, target);
        }
        const removeVersion = async (id: string) => {
          // The version is read (under the bucket's lock) before it goes: a retention or a legal hold keeps it.
          const { rows: existing } = await tx.query<StoredVersion>(
            'SELECT * FROM store_versions WHERE bucket_id = $1 AND key = $2 AND version_id = $3',
            [bucketId, key, id],
          );
          if (existing[0])
            assertMayDelete(versionOf(existing[0]), { bypassGovernance: options.bypassGovernance === true, now: new Date() });
          const { rows } = await tx.query<StoredVersion>(
            'DELETE FROM store_versions WHERE bucket_id = $1 AND key = $2 AND version_id = $3 RETURNING *',
            [bucketId, key, id],
          );
          const gone = rows[0] && versionOf(rows[0]);
          if (!gone) return undefined;
          const freed = gone.segments.map((segment) => segment.blob);
          await markGarbage(tx, freed);
          await addUsage(tx, orgId, bucketId, -gone.size_bytes, -1);
          return { gone, freed };
        };
        const addMarker = async (markerId: string) => {
          await tx.query(
            `INSERT INTO store_versions (bucket_id, key, version_id, delete_marker, size_bytes) VALUES ($1, $2, $3, true, 0)`,
            [bucketId, key, markerId],
          );
          await addUsage(tx, orgId, bucketId, 0, 1);
        };
        if (versionId !== undefined || !bucket.versioning_configured) {
          const removed = await removeVersion(versionId ?? 'null');
          if (!removed) return { versionId: versionId, deleteMarker: false, freed: [] as string[] };
          return { versionId: removed.gone.version_id, deleteMarker: removed.gone.delete_marker, freed: removed.freed };
        }
        if (!bucket.versioning) {
          // Suspended: the null version is replaced by a null delete marker.
          const removed = await removeVersion('null');
          await addMarker('null');
          return { versionId: 'null', deleteMarker: true, freed: removed?.freed ?? [] };
        }
        const markerId = newVersionId();
        await addMarker(markerId);
        return { versionId: markerId, deleteMarker: true, freed: [] as string[] };
      });
      await dropGarbage(context, outcome.freed);
      return { versionId: outcome.versionId, deleteMarker: outcome.deleteMarker };
    },

    /** Replaces the tags of a version (the key's latest when no id is given); the version id they were set on. */
    async setTags(bucketId: string, key: string, versionId: string | undefined, tags: Tag[]): Promise<string> {
      const target = await versionIn(pool, bucketId, key, versionId);
      if (!target || target.delete_marker) return missingVersion(key, versionId, target);
      const { rowCount } = await pool.query('UPDATE store_versions SET tags = $4 WHERE bucket_id = $1 AND key = $2 AND version_id = $3', [
        bucketId,
        key,
        target.version_id,
        JSON.stringify(tags),
      ]);
      if (rowCount === 0) return missingVersion(key, versionId, null);
      return target.version_id;
    },

    /** Replaces the ACL grants of a version (the key's latest when no id is given), with its audit event; the version id they were set on. */
    async setAcl(bucketId: string, key: string, versionId: string | undefined, acl: AclGrant[], audit: AuditStatement): Promise<string> {
      const target = await versionIn(pool, bucketId, key, versionId);
      if (!target || target.delete_marker) return missingVersion(key, versionId, target);
      await changeBucketRow(
        pool,
        'UPDATE store_versions SET acl = $4 WHERE bucket_id = $1 AND key = $2 AND version_id = $3',
        [bucketId, key, target.version_id, JSON.stringify(acl)],
        audit,
      );
      return target.version_id;
    },

    /** Keeps the LocationConstraint a bucket was created naming (GetBucketLocation answers it). */
    async setBucketLocation(bucketId: string, location: string): Promise<void> {
      await pool.query('UPDATE store_buckets SET location = $2 WHERE id = $1', [bucketId, location]);
      await context.cachesSynced();
    },

    /** Replaces a bucket's ACL grants, with its audit event. */
    async setBucketAcl(bucketId: string, acl: AclGrant[], audit: AuditStatement): Promise<void> {
      await setBucketColumn(context, bucketId, 'acl', acl, audit);
    },

    /** Sets a bucket's ObjectOwnership (null: removes it), with its audit event. */
    async setBucketOwnership(bucketId: string, ownership: string | null, audit: AuditStatement): Promise<void> {
      await setBucketColumn(context, bucketId, 'ownership', ownership, audit);
    },

    /** Sets a bucket's TagSet (null: removes it), with its audit event. */
    async setBucketTags(bucketId: string, tags: Tag[] | null, audit: AuditStatement): Promise<void> {
      await setBucketColumn(context, bucketId, 'tags', tags, audit);
    },

    /**
     * The latest version of each key, in key order after `after`, that is not a delete marker:
     * what ListObjectsV2 lists. `limit` rows at most.
     */
    async currentObjects(bucketId: string, prefix: string, after: string, limit: number): Promise<StoredVersion[]> {
      const { rows } = await pool.query<StoredVersion>(
        `SELECT * FROM (
           SELECT DISTINCT ON (key COLLATE "C") * FROM store_versions
           WHERE bucket_id = $1 AND key COLLATE "C" > $2 AND left(key, length($3)) = $3
           ORDER BY key COLLATE "C", seq DESC
         ) latest WHERE NOT delete_marker ORDER BY key COLLATE "C" LIMIT $4`,
        [bucketId, after, prefix, limit],
      );
      return rows.map(versionOf);
    },

    /** Versions and delete markers in key order, newest first within a key, after a (key, version) marker. */
    async versions(bucketId: string, prefix: string, afterKey: string, afterVersionId: string, limit: number): Promise<StoredVersion[]> {
      let afterSeq: number | null = null;
      if (afterVersionId !== '') {
        const { rows } = await pool.query<{ seq: number }>(
          'SELECT seq FROM store_versions WHERE bucket_id = $1 AND key = $2 AND version_id = $3',
          [bucketId, afterKey, afterVersionId],
        );
        afterSeq = rows[0] ? num(rows[0].seq) : null;
      }
      const { rows } = await pool.query<StoredVersion>(
        `SELECT v.*, ${LATEST} FROM store_versions v
         WHERE bucket_id = $1 AND left(key, length($3)) = $3
           AND (key COLLATE "C" > $2 OR ($4::bigint IS NOT NULL AND key = $2 AND seq < $4::bigint))
         ORDER BY key COLLATE "C", seq DESC LIMIT $5`,
        [bucketId, afterKey, prefix, afterSeq, limit],
      );
      return rows.map(versionOf);
    },
  };
}

export type ObjectOperations = ReturnType<typeof objectOperations>;

/** S3's refusal for a version that is not there (or is a delete marker, which has no tags or body). */
function missingVersion(key: string, versionId: string | undefined, found: StoredVersion | null): never {
  if (found?.delete_marker && versionId !== undefined)
    throw new StoreRefusal('MethodNotAllowed', 'The specified method is not allowed against this resource.');
  if (versionId !== undefined && !found) throw new StoreRefusal('NoSuchVersion', 'The specified version does not exist.');
  throw new StoreRefusal('NoSuchKey', `The specified key does not exist.`);
}

/** Writes an opened (sealed) piece to a client's response, as it takes it; `onSent` counts what it took. */
async function sendOpened(
  piece: Readable,
  out: Writable,
  onSent: (bytes: number) => void,
  pace: ((bytes: number) => Promise<void>) | undefined,
): Promise<void> {
  try {
    for await (const chunk of piece as AsyncIterable<Buffer>) {
      if (pace) await pace(chunk.length);
      if (out.destroyed || out.writableEnded)
        throw Object.assign(new Error('the client went away mid-body'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
      const more = out.write(chunk);
      onSent(chunk.length);
      if (!more) await waitForDrain(out);
    }
  } finally {
    piece.destroy();
  }
}

function waitForDrain(out: Writable): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const done = () => {
      out.off('drain', done);
      out.off('close', closed);
      resolve();
    };
    const closed = () => {
      out.off('drain', done);
      reject(Object.assign(new Error('the client went away mid-body'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    };
    out.once('drain', done);
    out.once('close', closed);
  });
}
