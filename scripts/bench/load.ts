// A bounded load run against one URL on 127.0.0.1: a fixed number of connections for a fixed
// time, after a short warm-up that is not counted. wrk (one thread) when it is installed, as the
// figures in docs/performance.md were taken; autocannon, in this process, otherwise.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { run } from '../lib/run.ts';

export interface LoadRequest {
  method: 'GET' | 'POST' | 'PUT';
  /** A URL on 127.0.0.1 (path and query included). */
  url: string;
  headers?: Record<string, string>;
  body?: string;
  /** Each request carries an Idempotency-Key of its own (creating requests). */
  freshIdempotencyKey?: boolean;
  /**
   * Each request's body has NUMBER_MARK replaced by a number of its own in the run (a name each
   * creation needs unique): the run's random prefix and a counter.
   */
  numberedBody?: boolean;
}

/** What a numbered body's number replaces (`numberedBody`). */
export const NUMBER_MARK = '@N@';

export interface LoadFigures {
  rps: number;
  p50: number;
  p99: number;
  p999: number;
  /** Requests that failed or were not answered with a 2xx. */
  failures: number;
  /** Requests sent in all, the warm-up's included. */
  sent: number;
}

export interface LoadSettings {
  connections: number;
  seconds: number;
  warmupSeconds: number;
}

export type LoadGenerator = 'wrk' | 'autocannon';

/**
 * The load generator: BENCH_LOAD names one; by default wrk when it is on the PATH. The choice
 * weighs on the figures of a 2-core machine: the generator shares the cores with the server and
 * its PostgreSQL, and autocannon (JavaScript) spends several times wrk's CPU on each request.
 */
export function loadGenerator(): LoadGenerator {
  const named = process.env.BENCH_LOAD;
  if (named === 'wrk' || named === 'autocannon') return named;
  if (named) throw new Error(`BENCH_LOAD=${named}: the load generators are wrk and autocannon`);
  return spawnSync('wrk', ['--version']).error === undefined ? 'wrk' : 'autocannon';
}

export async function load(request: LoadRequest, settings: LoadSettings, generator = loadGenerator()): Promise<LoadFigures> {
  const target = new URL(request.url);
  if (target.hostname !== '127.0.0.1') throw new Error(`the benchmark only targets 127.0.0.1, not ${target.hostname}`);
  const runFor = generator === 'wrk' ? wrkRun : autocannonRun;
  const warmup = settings.warmupSeconds > 0 ? (await runFor(request, settings.connections, settings.warmupSeconds)).sent : 0;
  const measured = await runFor(request, settings.connections, settings.seconds);
  return { ...measured, sent: warmup + measured.sent };
}

/** The request's headers, with the body's media type when it has one. */
function headersOf(request: LoadRequest): Record<string, string> {
  return { ...(request.body === undefined ? {} : { 'content-type': 'application/json' }), ...request.headers };
}

async function autocannonRun(request: LoadRequest, connections: number, seconds: number): Promise<LoadFigures> {
  const target = new URL(request.url);
  const prefix = randomUUID().slice(0, 8);
  let counter = 0;
  const result = await autocannon({
    url: target.origin,
    connections,
    duration: seconds,
    timeout: 10,
    requests: [
      {
        method: request.method,
        path: `${target.pathname}${target.search}`,
        headers: headersOf(request),
        body: request.body,
        setupRequest: (built) => ({
          ...built,
          ...(request.freshIdempotencyKey ? { headers: { ...built.headers, 'idempotency-key': randomUUID() } } : {}),
          ...(request.numberedBody ? { body: request.body!.replace(NUMBER_MARK, `${prefix}-${++counter}`) } : {}),
        }),
      },
    ],
  });
  return {
    rps: result.requests.total / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    p999: result.latency.p99_9,
    failures: result.errors + result.timeouts + result.non2xx,
    sent: result.requests.total,
  };
}

/** Marks the line of wrk's output that the script's `done` writes. */
const SUMMARY_MARK = 'BENCH_SUMMARY ';

/**
 * One wrk run (one thread: the harness's setting). Its Lua script sets the method, headers and
 * body, numbers the Idempotency-Keys when each request needs its own (a run's random prefix, then
 * a counter), and writes the summary as JSON: wrk's own report rounds its figures.
 */
async function wrkRun(request: LoadRequest, connections: number, seconds: number): Promise<LoadFigures> {
  const dir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-wrk-'));
  try {
    const script = path.join(dir, 'load.lua');
    writeFileSync(script, wrkScript(request));
    // wrk takes whole seconds.
    const wholeSeconds = Math.max(1, Math.round(seconds));
    const args = ['-t1', `-c${connections}`, `-d${wholeSeconds}s`, '--timeout', '10s', '-s', script, request.url];
    const { code, stdout, stderr } = await run('wrk', args);
    const output = `${stdout}${stderr}`;
    if (code !== 0) throw new Error(`wrk ${args.join(' ')} exited with ${code}:\n${output}`);
    const line = output.split('\n').find((text) => text.startsWith(SUMMARY_MARK));
    if (!line) throw new Error(`wrk wrote no summary:\n${output}`);
    const summary = JSON.parse(line.slice(SUMMARY_MARK.length)) as {
      requests: number;
      duration_us: number;
      failures: number;
      p50_us: number;
      p99_us: number;
      p999_us: number;
    };
    return {
      rps: summary.requests / (summary.duration_us / 1e6),
      p50: summary.p50_us / 1000,
      p99: summary.p99_us / 1000,
      p999: summary.p999_us / 1000,
      failures: summary.failures,
      sent: summary.requests,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A Lua string literal: printable ASCII as is, the rest as decimal escapes (LuaJIT has no \u). */
function luaString(text: string): string {
  let literal = '"';
  for (const byte of Buffer.from(text, 'utf8')) {
    literal += byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c ? String.fromCharCode(byte) : `\\${byte}`;
  }
  return `${literal}"`;
}

function wrkScript(request: LoadRequest): string {
  const headers = headersOf(request);
  const lines = [
    `wrk.method = ${luaString(request.method)}`,
    ...Object.entries(headers).map(([name, value]) => `wrk.headers[${luaString(name)}] = ${luaString(value)}`),
    ...(request.body === undefined ? [] : [`wrk.body = ${luaString(request.body)}`]),
  ];
  if (request.freshIdempotencyKey || request.numberedBody) {
    const [bodyBefore, bodyAfter] = request.numberedBody ? request.body!.split(NUMBER_MARK) : [];
    lines.push(
      `local prefix = ${luaString(randomUUID().slice(0, 8))}`,
      'local counter = 0',
      'request = function()',
      '  counter = counter + 1',
      ...(request.freshIdempotencyKey ? ['  wrk.headers["idempotency-key"] = prefix .. "-" .. counter'] : []),
      ...(request.numberedBody ? [`  wrk.body = ${luaString(bodyBefore!)} .. prefix .. "-" .. counter .. ${luaString(bodyAfter!)}`] : []),
      '  return wrk.format()',
      'end',
    );
  }
  lines.push(
    'done = function(summary, latency, requests)',
    '  local e = summary.errors',
    '  local failures = e.connect + e.read + e.write + e.status + e.timeout',
    `  io.write(string.format(${luaString(SUMMARY_MARK)} .. '{"requests":%d,"duration_us":%d,"failures":%d,"p50_us":%d,"p99_us":%d,"p999_us":%d}\\n',`,
    '    summary.requests, summary.duration, failures, latency:percentile(50), latency:percentile(99), latency:percentile(99.9)))',
    'end',
  );
  return `${lines.join('\n')}\n`;
}
