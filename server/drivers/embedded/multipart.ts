import { createHash, randomBytes } from 'node:crypto';
import type { Transform } from 'node:stream';
import { withTransaction, type PoolClient } from '../../db/pool.ts';
import { isChecksumAlgorithm, runningChecksum } from './checksums.ts';
import type { WriteCondition } from './conditions.ts';
import { lockForWrite } from './quota.ts';
import { StoreRefusal } from './refusals.ts';
import { num, type StoredPart, type StoredUpload, type VersionEncryption } from './rows.ts';
import { commitVersion, type VersionAttributes } from './objects.ts';
import type { VersionLock } from './object-lock.ts';
import type { WrappingKey } from './sealing.ts';
import { assertCommitFits, blobWrite, dropGarbage, markGarbage, streamedWrite, type BlobSource, type StoreContext } from './write-path.ts';

/** S3's smallest part, except for the last one. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;

const partOf = (row: StoredPart): StoredPart => ({ ...row, size_bytes: num(row.size_bytes) });

/**
 * Multipart uploads. Parts are files of their own, held as reserved space (they count against
 * the quotas) until the upload completes, when the chosen parts become the segments of one
 * version without being copied, or is aborted, when they go.
 */
export function multipartOperations(context: StoreContext) {
  const { pool, keyring } = context;

  const uploadOf = async (db: Pick<PoolClient, 'query'>, bucketId: string, key: string, uploadId: string): Promise<StoredUpload> => {
    const { rows } = await db.query<StoredUpload>('SELECT * FROM store_uploads WHERE upload_id = $1 AND bucket_id = $2 AND key = $3', [
      uploadId,
      bucketId,
      key,
    ]);
    if (!rows[0])
      throw new StoreRefusal(
        'NoSuchUpload',
        'The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.',
      );
    return rows[0];
  };

  return {
    /**
     * A new upload. `encryption`: how its parts are sealed (each part's write then names the
     * wrapping key); `lock`: the retention and legal hold of the version it completes into.
     */
    async createUpload(
      bucketId: string,
      key: string,
      attributes: VersionAttributes,
      checksumAlgorithm: string | null,
      options: { encryption?: VersionEncryption | null; lock?: VersionLock } = {},
    ): Promise<string> {
      const uploadId = randomBytes(24).toString('base64url');
      const lock = options.lock
        ? {
            mode: options.lock.retention?.mode ?? null,
            until: options.lock.retention?.until.toISOString() ?? null,
            legalHold: options.lock.legalHold ?? false,
          }
        : null;
      await pool.query(
        `INSERT INTO store_uploads (upload_id, bucket_id, key, content_type, headers, checksum_algorithm, tags, encryption, lock, acl)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [
          uploadId,
          bucketId,
          key,
          attributes.contentType,
          JSON.stringify(attributes.headers),
          checksumAlgorithm,
          JSON.stringify(attributes.tags ?? []),
          options.encryption ? JSON.stringify(options.encryption) : null,
          lock ? JSON.stringify(lock) : null,
          attributes.acl ? JSON.stringify(attributes.acl) : null,
        ],
      );
      return uploadId;
    },

    async upload(bucketId: string, key: string, uploadId: string): Promise<StoredUpload> {
      return uploadOf(pool, bucketId, key, uploadId);
    },

    /**
     * What completing the upload made, when it was completed lately (a client repeating its
     * CompleteMultipartUpload after a lost answer); undefined otherwise.
     */
    async completed(bucketId: string, key: string, uploadId: string): Promise<CompletedUpload | undefined> {
      const { rows } = await pool.query<CompletedUpload>(
        'SELECT version_id, etag, checksums, encryption FROM store_completed_uploads WHERE upload_id = $1 AND bucket_id = $2 AND key = $3',
        [uploadId, bucketId, key],
      );
      return rows[0];
    },

    async uploadPart(request: {
      orgId: string;
      bucketId: string;
      key: string;
      uploadId: string;
      partNumber: number;
      size: number;
      /** The bytes (see BlobSource); a shared segment is sealed as the upload's parts are. */
      body: BlobSource;
      transforms: Transform[];
      digests(): Promise<{ etag: string; checksums: Record<string, string> }>;
      /** The key that wraps the part's data key, when the upload is sealed (its `encryption`). */
      wrapping?: WrappingKey;
    }): Promise<StoredPart> {
      await uploadOf(pool, request.bucketId, request.key, request.uploadId);
      let digests: { etag: string; checksums: Record<string, string> } | undefined;
      const bytes = blobWrite(keyring, request.body, request.wrapping);
      const previousPart = async (tx: PoolClient) => {
        const { rows } = await tx.query<StoredPart>('SELECT * FROM store_parts WHERE upload_id = $1 AND part_number = $2', [
          request.uploadId,
          request.partNumber,
        ]);
        return rows[0] && partOf(rows[0]);
      };
      const { part, freed } = await streamedWrite(context, {
        orgId: request.orgId,
        bucketId: request.bucketId,
        size: request.size,
        objects: 0,
        body: bytes.body,
        transforms: request.transforms,
        seal: bytes.seal,
        replaces: async (tx) => ({ bytes: (await previousPart(tx))?.size_bytes ?? 0, objects: 0 }),
        verify: async () => void (digests = await request.digests()),
        async commit(tx, locked, blob) {
          // Aborted or completed while the part streamed in: the part is not kept.
          await uploadOf(tx, request.bucketId, request.key, request.uploadId);
          const previous = await previousPart(tx);
          await assertCommitFits(tx, locked, request.orgId, { bytes: request.size - (previous?.size_bytes ?? 0), objects: 0 });
          const { rows } = await tx.query<StoredPart>(
            `INSERT INTO store_parts (upload_id, part_number, blob, size_bytes, etag, checksums, sealing) VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (upload_id, part_number) DO UPDATE SET blob = EXCLUDED.blob, size_bytes = EXCLUDED.size_bytes,
               etag = EXCLUDED.etag, checksums = EXCLUDED.checksums, sealing = EXCLUDED.sealing, last_modified = now()
             RETURNING *`,
            [
              request.uploadId,
              request.partNumber,
              blob,
              request.size,
              digests!.etag,
              JSON.stringify(digests!.checksums),
              bytes.sealing ? JSON.stringify(bytes.sealing) : null,
            ],
          );
          const freedBlobs = previous ? [previous.blob] : [];
          await markGarbage(tx, freedBlobs);
          return { part: partOf(rows[0]!), freed: freedBlobs };
        },
      });
      await dropGarbage(context, freed);
      return part;
    },

    async parts(uploadId: string, afterPart: number, limit: number): Promise<StoredPart[]> {
      const { rows } = await pool.query<StoredPart>(
        'SELECT * FROM store_parts WHERE upload_id = $1 AND part_number > $2 ORDER BY part_number LIMIT $3',
        [uploadId, afterPart, limit],
      );
      return rows.map(partOf);
    },

    async uploads(bucketId: string, prefix: string, afterKey: string, afterUploadId: string, limit: number): Promise<StoredUpload[]> {
      const { rows } = await pool.query<StoredUpload>(
        `SELECT * FROM store_uploads WHERE bucket_id = $1 AND left(key, length($2)) = $2
           AND (key COLLATE "C" > $3 OR (key = $3 AND upload_id > $4))
         ORDER BY key COLLATE "C", upload_id LIMIT $5`,
        [bucketId, prefix, afterKey, afterUploadId, limit],
      );
      return rows;
    },

    /**
     * Completes an upload from the listed parts (ascending, each as uploaded, all but the last at
     * least 5 MiB): one version whose segments are the parts' files. Parts not listed go. A part
     * number listed twice counts once, as its last listing says (as RGW reads the list: a client
     * that sent a part twice lists both answers). A repeated completion is answered as the first.
     */
    async complete(request: {
      orgId: string;
      bucketId: string;
      key: string;
      uploadId: string;
      parts: Array<{ partNumber: number; etag: string; checksums: Record<string, string> }>;
      condition?: WriteCondition;
      /** The whole object's checksums the client gave (x-amz-checksum-*), checked against the composite one made. */
      checksums?: Record<string, string>;
    }): Promise<CompletedUpload> {
      const { version, freed } = await withTransaction(pool, async (tx) => {
        const locked = await lockForWrite(tx, request.orgId, request.bucketId);
        const upload = await uploadOf(tx, request.bucketId, request.key, request.uploadId).catch(async (error: unknown) => {
          const done = await tx.query<CompletedUpload>(
            'SELECT version_id, etag, checksums, encryption FROM store_completed_uploads WHERE upload_id = $1 AND bucket_id = $2 AND key = $3',
            [request.uploadId, request.bucketId, request.key],
          );
          if (done.rows[0]) return done.rows[0];
          throw error;
        });
        if (!('upload_id' in upload)) return { version: upload, freed: [] };
        await tx.query('SELECT 1 FROM store_uploads WHERE upload_id = $1 FOR UPDATE', [upload.upload_id]);
        const stored = new Map(
          (await tx.query<StoredPart>('SELECT * FROM store_parts WHERE upload_id = $1', [upload.upload_id])).rows.map((row) => [
            row.part_number,
            partOf(row),
          ]),
        );
        if (request.parts.length === 0) throw new StoreRefusal('InvalidPart', 'You must specify at least one part');
        const listedParts = request.parts.filter((listed, index) => request.parts[index + 1]?.partNumber !== listed.partNumber);
        const chosen: StoredPart[] = [];
        listedParts.forEach((listed, index) => {
          if (index > 0 && listed.partNumber <= listedParts[index - 1]!.partNumber)
            throw new StoreRefusal(
              'InvalidPartOrder',
              'The list of parts was not in ascending order. Parts must be ordered by part number.',
            );
          const part = stored.get(listed.partNumber);
          if (!part || unquote(listed.etag) !== part.etag)
            throw new StoreRefusal('InvalidPart', `Part ${listed.partNumber} was not uploaded, or its ETag does not match`);
          for (const [algorithm, value] of Object.entries(listed.checksums)) {
            if (part.checksums[algorithm] !== undefined && part.checksums[algorithm] !== value)
              throw new StoreRefusal(
                'InvalidPart',
                `The ${algorithm} checksum of part ${listed.partNumber} does not match the uploaded part`,
              );
          }
          chosen.push(part);
        });
        // Every part of a sealed upload is sealed, and none of a plain one (the S3 endpoint sees to it as parts come).
        if (chosen.some((part) => (part.sealing !== null) !== (upload.encryption !== null)))
          throw new StoreRefusal('InvalidPart', 'A part was not uploaded with the encryption of its upload');
        chosen.slice(0, -1).forEach((part) => {
          if (part.size_bytes < MIN_PART_BYTES)
            throw new StoreRefusal('EntityTooSmall', `Part ${part.part_number} is smaller than the minimum allowed size (5 MiB)`);
        });
        const size = chosen.reduce((total, part) => total + part.size_bytes, 0);
        const md5s = Buffer.concat(chosen.map((part) => Buffer.from(part.etag, 'hex')));
        const etag = `${createHash('md5').update(md5s).digest('hex')}-${chosen.length}`;
        const checksums = compositeChecksums(upload.checksum_algorithm, chosen);
        for (const [algorithm, given] of Object.entries(request.checksums ?? {})) {
          const made = checksums[algorithm];
          // Given with its `-<parts>` suffix, as S3 answers it, or without.
          if (made === undefined || (given !== made && given !== made.replace(/-\d+$/, '')))
            throw new StoreRefusal('BadDigest', `The ${algorithm.toUpperCase()} you specified did not match the calculated checksum.`);
        }
        const committed = await commitVersion(tx, locked, request.orgId, request.key, {
          size,
          etag,
          checksums,
          segments: chosen.map((part) => ({
            blob: part.blob,
            size: part.size_bytes,
            etag: part.etag,
            checksums: part.checksums,
            ...(part.sealing ? { sealing: part.sealing } : {}),
          })),
          attributes: { contentType: upload.content_type, headers: upload.headers, tags: upload.tags, acl: upload.acl },
          excludeUpload: upload.upload_id,
          condition: request.condition,
          encryption: upload.encryption,
          lock: upload.lock
            ? {
                retention:
                  upload.lock.mode && upload.lock.until ? { mode: upload.lock.mode, until: new Date(upload.lock.until) } : undefined,
                legalHold: upload.lock.legalHold,
              }
            : undefined,
        });
        const unused = [...stored.values()].filter((part) => !chosen.includes(part)).map((part) => part.blob);
        await markGarbage(tx, unused);
        await tx.query('DELETE FROM store_uploads WHERE upload_id = $1', [upload.upload_id]);
        const { version_id, etag: madeEtag, checksums: madeChecksums, encryption } = committed.version;
        await tx.query(
          `INSERT INTO store_completed_uploads (upload_id, bucket_id, key, version_id, etag, checksums, encryption)
           VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          [
            upload.upload_id,
            request.bucketId,
            request.key,
            version_id,
            madeEtag,
            JSON.stringify(madeChecksums),
            encryption ? JSON.stringify(encryption) : null,
          ],
        );
        return { version: { version_id, etag: madeEtag!, checksums: madeChecksums, encryption }, freed: [...committed.freed, ...unused] };
      });
      await dropGarbage(context, freed);
      return version;
    },

    async abort(bucketId: string, key: string, uploadId: string): Promise<void> {
      const freed = await withTransaction(pool, async (tx) => {
        await uploadOf(tx, bucketId, key, uploadId);
        const { rows } = await tx.query<{ blob: string }>('SELECT blob FROM store_parts WHERE upload_id = $1', [uploadId]);
        await markGarbage(
          tx,
          rows.map((row) => row.blob),
        );
        await tx.query('DELETE FROM store_uploads WHERE upload_id = $1', [uploadId]);
        return rows.map((row) => row.blob);
      });
      await dropGarbage(context, freed);
    },
  };
}

const unquote = (etag: string): string => etag.replace(/^"|"$/g, '');

/** What a completed upload made: the version, its ETag, checksums and encryption. */
export interface CompletedUpload {
  version_id: string;
  etag: string;
  checksums: Record<string, string>;
  encryption: VersionEncryption | null;
}

/**
 * The checksum of a multipart object as S3 gives it: the checksum of the parts' checksums
 * (binary, concatenated), then `-<parts>`; only when every part carries the upload's algorithm.
 */
function compositeChecksums(algorithm: string | null, parts: StoredPart[]): Record<string, string> {
  if (!algorithm || !isChecksumAlgorithm(algorithm) || parts.some((part) => part.checksums[algorithm] === undefined)) return {};
  const running = runningChecksum(algorithm);
  for (const part of parts) running.update(Buffer.from(part.checksums[algorithm]!, 'base64'));
  return { [algorithm]: `${running.digest()}-${parts.length}`, type: 'COMPOSITE' };
}
