// The AWS CLI (the second S3 client the endpoint is held to) against the endpoint: `aws s3` copies up
// (multipart above 8 MiB) and down, lists, `aws s3api` lists versions, and over-quota writes
// fail. CI installs the CLI (.ci/run); without it this test fails rather than skip.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { MiB, createAccessKey, createBucket, setBucketQuota, startS3Server, type IssuedKey } from './support.ts';

const run = promisify(execFile);
let server: Awaited<ReturnType<typeof startS3Server>>;
let key: IssuedKey;
const work = mkdtempSync(path.join(tmpdir(), 'aws-cli-'));

beforeAll(async () => {
  server = await startS3Server();
  key = await createAccessKey(server, server.org);
}, 120_000);
afterAll(async () => server?.close());

/** `aws …` with the key in its environment and no profile of the machine's. */
function aws(...args: string[]) {
  return run('aws', ['--endpoint-url', server.s3Url, ...args], {
    env: {
      PATH: process.env.PATH,
      HOME: work,
      AWS_ACCESS_KEY_ID: key.accessKeyId,
      AWS_SECRET_ACCESS_KEY: key.secretAccessKey,
      AWS_DEFAULT_REGION: 'us-east-1',
      AWS_CONFIG_FILE: path.join(work, 'none'),
      AWS_SHARED_CREDENTIALS_FILE: path.join(work, 'none'),
      AWS_EC2_METADATA_DISABLED: 'true',
    },
    maxBuffer: 16 * MiB,
  });
}

test('aws s3 cp up and down (multipart above 8 MiB), aws s3 ls, aws s3api list-object-versions, and a refused write', async () => {
  const bucket = await createBucket(server, server.org, 'cli-bucket', { versioning: true });
  const data = randomBytes(9 * MiB + 5);
  const local = path.join(work, 'upload.bin');
  writeFileSync(local, data);
  await aws('s3', 'cp', local, 's3://cli-bucket/dir/upload.bin');
  await aws('s3', 'cp', local, 's3://cli-bucket/dir/upload.bin');
  const listing = await aws('s3', 'ls', 's3://cli-bucket/dir/');
  expect(listing.stdout).toMatch(new RegExp(`${data.length}\\s+upload\\.bin`));
  const downloaded = path.join(work, 'download.bin');
  await aws('s3', 'cp', 's3://cli-bucket/dir/upload.bin', downloaded);
  expect(readFileSync(downloaded).equals(data)).toBe(true);
  const versions = JSON.parse((await aws('s3api', 'list-object-versions', '--bucket', 'cli-bucket')).stdout) as {
    Versions: Array<{ Key: string; Size: number; ETag: string }>;
  };
  expect(versions.Versions.map((version) => [version.Key, version.Size])).toEqual([
    ['dir/upload.bin', data.length],
    ['dir/upload.bin', data.length],
  ]);
  expect(versions.Versions[0]!.ETag).toMatch(/^"[0-9a-f]{32}-2"$/);

  await setBucketQuota(server, server.org, bucket.id, { max_objects: 2 });
  const refused = await aws('s3', 'cp', local, 's3://cli-bucket/third.bin').then(
    () => undefined,
    (error: { stderr: string }) => error.stderr,
  );
  expect(refused).toContain('QuotaExceeded');
}, 120_000);
