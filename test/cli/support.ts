// The `cloud` command as a user runs it: a process, with its own HOME (so its own config file), its
// arguments, what is typed on its standard input, and its exit code.
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../scripts/lib/run.ts';

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

export const CLI = path.join(repoRoot, 'client', 'cli', 'cloud.mjs');

/** A fresh home folder (the config file lands in it) that is also the working directory. */
export const newHome = () => mkdtempSync(path.join(tmpdir(), 'cloud-cli-home-'));

export interface CloudOptions {
  env?: Record<string, string>;
  /** Written to standard input, which is then closed (closed at once when absent). */
  input?: string;
  cwd?: string;
}

/** Runs `cloud args…` with only PATH and HOME from this environment, plus `env`. */
export function runCloud(args: string[], options: CloudOptions = {}): Promise<Ran> {
  const home = options.cwd ?? newHome();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: home,
      env: { PATH: process.env.PATH, HOME: home, ...options.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

/** A folder holding a `cloud` executable that runs this repository's CLI, to put first on a shell's PATH. */
export function cloudOnPath(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'cloud-cli-bin-'));
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'cloud');
  writeFileSync(file, `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
  chmodSync(file, 0o755);
  return dir;
}

/** Runs a shell command line and gives its output (for the completion scripts). */
export function shell(program: string, args: string[], env: Record<string, string>): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { env: { ...env, TERM: 'dumb' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end();
  });
}
