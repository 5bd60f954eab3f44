import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** The repository root, wherever a script is started from. */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A binary installed by npm in this repository. */
export function bin(name: string): string {
  return path.join(repoRoot, 'node_modules', '.bin', name);
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command to completion and captures its output. Update notices and telemetry of the
 * tools are switched off so that their output is stable and nothing is fetched from the network.
 */
export function run(command: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? repoRoot,
      env: {
        ...process.env,
        REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
        REDOCLY_TELEMETRY: 'off',
        NO_UPDATE_NOTIFIER: '1',
        NO_COLOR: '1',
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}
