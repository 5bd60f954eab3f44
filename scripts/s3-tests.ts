// Ceph's own S3 compatibility suite (ceph/s3-tests: test_s3.py and test_headers.py, without the
// slow lifecycle-expiry tests) against the embedded S3 endpoint of a server this script starts
// with `npm start` on a fresh DATA_DIR: unmodified, with no adapter. The suite is not part of this
// repository and nothing is fetched here; get it once, at the commit the project measures with:
//
//   git clone https://github.com/ceph/s3-tests /path/to/s3-tests
//   git -C /path/to/s3-tests checkout 2805e0c   # 772 tests with lifecycle_expiration left out
//   apt-get install python3-boto3 python3-pytest python3-munch python3-gevent python3-isodate python3-tz python3-lxml
//   npx tsx scripts/s3-tests.ts --suite /path/to/s3-tests [--out DIR] [--compare DIR/results.json] [-k EXPR] [--rgw]
//
// With --rgw the server runs the rgw driver on Ceph's gateway (a single-node Ceph brought up by
// scripts/ceph/, or the gateway CEPH_RGW_ENDPOINT names with CEPH_RGW_ADMIN_ACCESS_KEY and
// CEPH_RGW_ADMIN_SECRET_KEY), and the suite talks to the gateway with keys issued by the platform.
//
// The suite's `main` user is a key of the organization the server makes at its first start;
// `alt` and `tenant` are keys of two more organizations (`npm run admin -- create-org`), as AWS
// accounts are. Prints the passes by group; writes results.json (each test's outcome) and the
// server's log to --out. With --compare, prints the tests whose outcome changed.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { readBootstrap } from './lib/bootstrap-file.ts';
import { npmStartCommand } from './lib/npm-start.ts';
import { freePort, startProcess, waitForHttp } from './lib/processes.ts';
import { repoRoot } from './lib/run.ts';
import { startSingleNodeCeph } from './ceph/single-node.ts';

const { values: options } = parseArgs({
  options: {
    suite: { type: 'string' },
    out: { type: 'string' },
    compare: { type: 'string' },
    k: { type: 'string' },
    python: { type: 'string', default: '/usr/bin/python3' },
    'keep-data': { type: 'boolean', default: false },
    rgw: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
const USAGE = 'usage: npx tsx scripts/s3-tests.ts --suite /path/to/ceph/s3-tests [--out DIR] [--compare results.json] [-k EXPR] [--rgw]';

/** The tests left out: the lifecycle-expiry ones wait for objects to expire (minutes each). */
const MARKERS = 'not lifecycle_expiration';

/** The groups the results are counted by, from the test's name (first match wins). */
const GROUPS: Array<[string, RegExp]> = [
  ['Object lock', /object_lock|legal_hold|retention/],
  ['Encryption', /encrypt|_sse|sse_|_kms|bucket_policy_put_obj_(s3|kms)/],
  ['Lifecycle configuration', /lifecycle/],
  ['CORS', /cors/],
  ['POST object (browser form)', /post_object/],
  ['Tagging', /tagging|_tags?(_|$)/],
  ['Policy', /policy|public_block|block_public|public_access/],
  ['ACL', /acl|grant|object_ownership|_private_|_public_read|authenticated|_raw_.*(priv|pub)/],
  ['Presigned', /presign/],
  ['Versioning', /version/],
  ['Checksums', /checksum|crc|sha256/],
  ['Multipart', /multipart|upload_part|_part_|_parts/],
  ['Copy', /copy/],
  ['Range', /range/],
  ['Conditional', /_if_|ifmatch|ifnonematch|ifmodified|ifunmodified|conditional|precondition/],
  ['Listing', /list|prefix|delimiter|marker|max_keys|maxkeys|continuation|encoding_type|startafter|fetchowner/],
  [
    'Bucket create, naming and delete',
    /bucket_(create|naming|delete|head|recreate|concurrent|get_location|location|exist)|buckets_create|bucket_name/,
  ],
  [
    'Auth and headers',
    /auth|signature|anonymous|headers|_raw_|_bad_|_invalid_|_empty_|_none_|_unreadable|_date_|content_length|expect|md5|useragent|amz_date/,
  ],
];
if (options.help) {
  console.log(`${USAGE}\n\nThe tests are counted by group, the first pattern a test's name matches:`);
  for (const [group, pattern] of GROUPS) console.log(`  ${group.padEnd(34)} ${pattern.source}`);
  process.exit(0);
}
if (!options.suite) {
  console.error(USAGE);
  process.exit(2);
}
const suite = path.resolve(options.suite);
const out = path.resolve(options.out ?? mkdtempSync(path.join(tmpdir(), 's3-tests-out-')));
mkdirSync(out, { recursive: true });

const groupOf = (name: string, file: string): string => {
  const found = GROUPS.find(([, pattern]) => pattern.test(name));
  if (found) return found[0];
  return file.endsWith('test_headers.py') ? 'Auth and headers' : 'Object operations';
};

const ceph = options.rgw ? await startSingleNodeCeph() : undefined;
const dataDir = mkdtempSync(path.join(tmpdir(), 's3-tests-data-'));
const [port, s3Port] = [await freePort(), await freePort()];
const start = npmStartCommand(repoRoot);
const server = startProcess(
  process.execPath,
  [...start.nodeArgs, ...start.args],
  {
    ...start.env,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: String(port),
    S3_PORT: String(s3Port),
    METRICS_PORT: 'off',
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
    OBJECT_STORE_DRIVER: 'embedded',
    ...(ceph?.env ?? {}),
  },
  { keepLastChars: 2_000_000 },
);

try {
  await waitForHttp(`http://127.0.0.1:${port}/healthz`, server, 180_000, 200);
  const boot = await readBootstrap(dataDir, server);
  // Where the suite's clients go: the embedded endpoint, or the gateway itself.
  const endpoint = new URL(boot.s3_endpoint ?? ceph!.endpoint);
  const api = `http://127.0.0.1:${port}/v1`;
  // The few answers read here, as far as they are read.
  interface Answer {
    operation: { id: string };
    access_key: { id: string };
    secret_access_key: string;
    state: string;
    finished_at: string | null;
    items: Array<{ id: string; objectstore_access_key_id: string }>;
  }
  const call = async (apiKey: string, method: string, url: string, body?: unknown): Promise<Answer> => {
    const response = await fetch(`${api}${url}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${method} ${url}: ${response.status} ${text}`);
    return JSON.parse(text) as Answer;
  };
  /** An S3 access key of the organization, once its operation succeeded. */
  const accessKey = async (orgId: string, apiKey: string) => {
    const created = await call(apiKey, 'POST', `/orgs/${orgId}/s3/access-keys`);
    for (let waited = 0; ; waited += 100) {
      const operation = await call(apiKey, 'GET', `/orgs/${orgId}/operations/${created.operation.id}`);
      if (operation.state === 'succeeded') break;
      if (operation.finished_at || waited > 60_000) throw new Error(`the access key was not issued: ${JSON.stringify(operation)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const keys = await call(apiKey, 'GET', `/orgs/${orgId}/s3/access-keys`);
    const record = keys.items.find((item) => item.id === created.access_key.id);
    if (!record) throw new Error('the access key is not listed');
    return { orgId, accessKeyId: record.objectstore_access_key_id, secret: created.secret_access_key };
  };
  const admin = (name: string) =>
    new Promise<{ org_id: string; api_key: string }>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [path.join(repoRoot, 'scripts/start.mjs'), 'server/admin/main.ts', 'create-org', '--name', name, '--json'],
        {
          cwd: repoRoot,
          env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent' },
        },
      );
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(stdout)) : reject(new Error(`create-org exited ${code}: ${stdout}`))));
    });
  const main = await accessKey(boot.org_id, boot.api_key);
  const altOrg = await admin('s3-tests alt');
  const alt = await accessKey(altOrg.org_id, altOrg.api_key);
  const tenantOrg = await admin('s3-tests tenant');
  const tenant = await accessKey(tenantOrg.org_id, tenantOrg.api_key);

  const user = (key: typeof main, display: string, email: string) =>
    `display_name = ${display}\nuser_id = ${key.orgId}\nemail = ${email}\naccess_key = ${key.accessKeyId}\nsecret_key = ${key.secret}\n`;
  const conf = path.join(out, 's3tests.conf');
  writeFileSync(
    conf,
    `[DEFAULT]\nhost = ${endpoint.hostname}\nport = ${endpoint.port}\nis_secure = False\nssl_verify = False\n\n` +
      `[fixtures]\nbucket prefix = s3t-{random}-\niam name prefix = s3-tests-\niam path prefix = /s3-tests/\n\n` +
      `[s3 main]\n${user(main, 'cloud-platform', 'main@example.com')}api_name = us-east-1\n\n` +
      `[s3 alt]\n${user(alt, 'cloud-platform', 'alt@example.com')}\n` +
      `[s3 tenant]\n${user(tenant, 'cloud-platform', 'tenant@example.com')}tenant = testx\n\n` +
      `[iam]\n${user(main, 'cloud-platform', 'main@example.com')}\n` +
      `[iam root]\n${user(main, 'cloud-platform', 'main@example.com')}\n` +
      `[iam alt root]\n${user(alt, 'cloud-platform', 'alt@example.com')}`,
  );

  const junit = path.join(out, 'junit.xml');
  const args = ['-m', 'pytest', '-v', '-p', 'no:cacheprovider', '-m', MARKERS, `--junitxml=${junit}`, '-o', 'junit_family=xunit1'];
  if (options.k) args.push('-k', options.k);
  args.push('s3tests/functional/test_s3.py', 's3tests/functional/test_headers.py');
  const started = Date.now();
  // Its output goes to pytest.log as it comes (a run takes an hour on a busy machine: watch it there).
  const log = openSync(path.join(out, 'pytest.log'), 'w');
  const code = await new Promise<number>((resolve) => {
    const child = spawn(options.python, args, { cwd: suite, env: { ...process.env, S3TEST_CONF: conf }, stdio: ['ignore', log, log] });
    child.on('exit', (exit) => resolve(exit ?? 1));
  });
  closeSync(log);
  console.log(`pytest exited ${code} after ${((Date.now() - started) / 60_000).toFixed(1)} min`);

  // Each test case of the JUnit report: passed, failed (or errored), or skipped.
  const results: Record<string, { file: string; outcome: 'passed' | 'failed' | 'skipped'; message?: string }> = {};
  const report = readFileSync(junit, 'utf8');
  for (const match of report.matchAll(/<testcase ([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const attributes = new Map([...match[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((pair) => [pair[1]!, pair[2]!]));
    const body = match[3] ?? '';
    const outcome = /<(failure|error)/.test(body) ? 'failed' : /<skipped/.test(body) ? 'skipped' : 'passed';
    const message = /<(?:failure|error) message="([^"]*)"/.exec(body)?.[1];
    results[attributes.get('name')!] = {
      file: attributes.get('file') ?? attributes.get('classname') ?? '',
      outcome,
      ...(message ? { message } : {}),
    };
  }
  writeFileSync(path.join(out, 'results.json'), JSON.stringify(results, null, 1));

  const groups = new Map<string, { passed: number; total: number }>();
  for (const [name, result] of Object.entries(results)) {
    const group = groupOf(name, result.file);
    const counts = groups.get(group) ?? { passed: 0, total: 0 };
    counts.total++;
    if (result.outcome === 'passed') counts.passed++;
    groups.set(group, counts);
  }
  const all = Object.values(results);
  console.log(`\n| Group | Passed |\n|---|---|`);
  for (const [group, counts] of [...groups].sort((a, b) => b[1].total - a[1].total))
    console.log(`| ${group} | ${counts.passed} / ${counts.total} |`);
  console.log(`| **All** | **${all.filter((result) => result.outcome === 'passed').length} / ${all.length}** |`);
  console.log(`(${all.filter((result) => result.outcome === 'skipped').length} skipped)`);

  if (options.compare) {
    const before = JSON.parse(readFileSync(path.resolve(options.compare), 'utf8')) as typeof results;
    const changed = (from: string, to: string) =>
      Object.keys(results).filter((name) => (before[name]?.outcome ?? 'absent') === from && results[name]!.outcome === to);
    console.log(`\nnow passing (${changed('failed', 'passed').length}):\n  ${changed('failed', 'passed').join('\n  ')}`);
    console.log(`\nno longer passing (${changed('passed', 'failed').length}):\n  ${changed('passed', 'failed').join('\n  ')}`);
  }
  console.log(`\nresults: ${out}/results.json; pytest log: ${out}/pytest.log; server log: ${out}/server.log`);
} finally {
  await server.stop();
  await ceph?.stop();
  writeFileSync(path.join(out, 'server.log'), server.output());
  if (!options['keep-data']) rmSync(dataDir, { recursive: true, force: true });
}
