// `cloud vm console NAME` attached to a real console session (through a pipe, and through a
// pseudo-terminal made by util-linux's `script`, where raw mode and its restoring show), and the
// completion scripts run by bash, zsh and fish, completing from the CLI and the API.
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';
import { vmRequest } from '../server/areas/compute/fixtures.ts';
import { CLI, cloudOnPath, newHome, runCloud, shell } from './support.ts';

let server: TestServer;
let env: Record<string, string>;
beforeAll(async () => {
  server = await startTestServer();
  env = { CLOUD_BASE_URL: server.url, CLOUD_API_KEY: server.org.ownerKey };
  const created = await server.org.call('POST', '/compute/vms', { body: vmRequest({ name: 'term-1' }) });
  await server.waitForOperation(server.org, created.body.operation.id);
});
afterAll(() => server?.close());

/** A process whose output can be awaited, fed step by step. */
function interactive(command: string, args: string[], childEnv: Record<string, string>) {
  const child = spawn(command, args, { cwd: newHome(), env: { PATH: process.env.PATH, ...childEnv } });
  let stdout = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  const changed = () => waiters.forEach((waiter) => waiter());
  child.stdout.on('data', (chunk: Buffer) => ((stdout += chunk.toString()), changed()));
  child.stderr.on('data', (chunk: Buffer) => ((stderr += chunk.toString()), changed()));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  // Typing to a process that has already ended (`script` ends with its command) fails with EPIPE:
  // nothing more is read, and what it did is judged by its output and its exit code.
  child.stdin.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
  return {
    output: () => stdout,
    errors: () => stderr,
    type: (text: string) => child.stdin.write(text),
    exited,
    /** Resolves once standard output matches. */
    waitFor(pattern: RegExp, timeoutMs = 20_000): Promise<void> {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!pattern.test(stdout)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`never saw ${String(pattern)}; saw:\n${stdout}\n${stderr}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}

describe('cloud vm console', () => {
  test('attaches to the console by name: what is typed reaches the instance, Ctrl-] detaches, exit 0', async () => {
    const session = interactive(process.execPath, [CLI, 'vm', 'console', 'term-1'], env);
    await session.waitFor(/login: $/);
    session.type('root\r');
    await session.waitFor(/Password: $/);
    session.type('hunter2\r');
    await session.waitFor(/root@term-1:~# $/);
    session.type('hostname\r');
    await session.waitFor(/\r\nterm-1\r\n/);
    session.type('\u001d');
    expect(await session.exited).toBe(0);
    expect(session.errors()).toContain('Ctrl-] detaches');
    expect(session.errors()).toContain('Detached from the console.');
  });

  test('in a terminal: raw mode (a key reaches the instance with no Enter, and Ctrl-] with it), the terminal restored after', async () => {
    const session = interactive('script', ['-qec', `"${process.execPath}" "${CLI}" vm console term-1; stty -a`, '/dev/null'], env);
    await session.waitFor(/login: $/);
    // No Enter: only raw mode passes these keys on at once.
    session.type('roo');
    await session.waitFor(/login: roo$/);
    session.type('\u001d');
    await session.waitFor(/Detached from the console\.[\s\S]*speed \d+ baud[\s\S]*icanon[\s\S]*echo/);
    const settings = session.output().slice(session.output().indexOf('speed'));
    // stty's view after the CLI ended: canonical input and echo are back.
    expect(settings).toMatch(/(^|\s)icanon(\s|$)/m);
    expect(settings).toMatch(/(^|\s)echo(\s|$)/m);
    session.type('\u0004');
    expect(await session.exited).toBe(0);
  });

  test('an unknown instance is exit 2 before anything is requested', async () => {
    const ran = await runCloud(['vm', 'console', 'nope'], { env });
    expect(ran.code).toBe(2);
    expect(ran.stderr).toContain('no instance named "nope"');
  });
});

const hasShell = (name: string) => {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};
// CI installs zsh and fish (.ci/run); elsewhere a missing shell is skipped, and says so.
const inCi = process.env.CI === 'true' || process.env.CI === '1';

describe('completion', () => {
  const shellEnv = () => ({ PATH: `${cloudOnPath()}:${process.env.PATH}`, HOME: newHome(), ...env });

  test('bash: commands, verbs, flags, enum values, and the names of instances from the API', async () => {
    const script = (await runCloud(['completion', 'bash'])).stdout;
    const complete = async (words: string[]) => {
      const line = `${script}\nCOMP_WORDS=(${words.map((word) => `'${word}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _cloud; printf '%s\\n' "\${COMPREPLY[@]}"`;
      const ran = await shell('bash', ['-c', line], shellEnv());
      return ran.stdout.split('\n').filter(Boolean);
    };
    expect(await complete(['cloud', 'buc'])).toEqual(['bucket']);
    expect(await complete(['cloud', 'bucket', 're'])).toEqual(['restore']);
    expect(await complete(['cloud', 'vm', 'con'])).toEqual(['console']);
    expect(await complete(['cloud', 'vm', 'create', '--memo'])).toEqual(['--memory-mb']);
    expect(await complete(['cloud', 'vm', 'list', '--state', 'run'])).toEqual(['running']);
    expect(await complete(['cloud', 'vm', 'get', ''])).toEqual(['term-1']);
    expect(await complete(['cloud', 'vm', 'console', 'te'])).toEqual(['term-1']);
  });

  test.skipIf(!hasShell('zsh') && !inCi)('zsh: the same candidates, with descriptions', async () => {
    const script = (await runCloud(['completion', 'zsh'])).stdout;
    // compadd and compdef stand in for the completion system: compadd prints what it was given.
    const line = `compdef() { :; }; compadd() { print -l -- "\${(@P)\${@[-1]}}"; print -l -- "\${(@P)\${@[3]}}" }\n${script}\nwords=(cloud vm get ""); CURRENT=4; _cloud`;
    const ran = await shell('zsh', ['-c', line], shellEnv());
    expect(ran.stdout.split('\n')).toContain('term-1');
    expect(ran.stdout).toMatch(/^term-1 {2}-- running, fra1$/m);
    const verbs = await shell(
      'zsh',
      ['-c', line.replace('words=(cloud vm get "")', 'words=(cloud vm "")').replace('CURRENT=4', 'CURRENT=3')],
      shellEnv(),
    );
    expect(verbs.stdout.split('\n')).toEqual(expect.arrayContaining(['create', 'list', 'console']));
  });

  test.skipIf(!hasShell('fish') && !inCi)('fish: commands, flags and names, with descriptions', async () => {
    const script = (await runCloud(['completion', 'fish'])).stdout;
    const complete = async (typed: string) => (await shell('fish', ['-c', `${script}\ncomplete -C '${typed}'`], shellEnv())).stdout;
    expect(await complete('cloud buc')).toMatch(/^bucket$/m);
    expect(await complete('cloud vm get ')).toMatch(/^term-1\trunning, fra1$/m);
    expect(await complete('cloud vm create --memo')).toMatch(/^--memory-mb\trequired, integer 512\.\.262144$/m);
  });
});
