// npm install's last step (package.json's postinstall): the embedded PostgreSQL's cluster template
// and a copy made ahead, for the first `npm start` to take. It runs as npm runs it, and must end 0
// with both made: a failure here fails `npm install` and `npm ci` for everyone.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';
import { repoRoot } from '../../scripts/lib/run.ts';
import { eventually } from '../support/eventually.ts';

/** How long a spare may take to appear at most: a limit on a loaded machine, not a duration. */
const SPARE_WAIT_MS = 120_000;

test.runIf(process.platform === 'linux')(
  "npm install's last step leaves the cluster template and its spare made, and ends 0",
  async () => {
    const { scripts } = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const [command, ...args] = scripts.postinstall!.split(' ');
    expect(command).toBe('node');
    // The spare is what a first start takes: gone (taken, or never made), the step makes it again.
    const first = await promisify(execFile)(process.execPath, args, { cwd: repoRoot });
    const template = /template is ready \(\d+ ms\): (.+)$/m.exec(first.stdout)?.[1];
    expect(template, first.stdout + first.stderr).toBeDefined();
    rmSync(`${template}.spare`, { recursive: true, force: true });

    const again = await promisify(execFile)(process.execPath, args, { cwd: repoRoot });
    expect(again.stdout).toContain(template);
    expect(existsSync(path.join(template!, 'PG_VERSION'))).toBe(true);
    // Made by the step, or, when a server's first start was making one meanwhile (the template
    // folder is node_modules's, shared with the other tests' servers), by that server: the step
    // then leaves it to that one, and the spare comes once it is done. Made below the normal CPU
    // priority: slow on a loaded machine, never missing.
    await eventually(() => (existsSync(path.join(`${template}.spare`, 'PG_VERSION')) ? true : undefined), 'the spare', SPARE_WAIT_MS);
  },
  300_000,
);
