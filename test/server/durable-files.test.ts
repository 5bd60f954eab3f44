// The files the server keeps beside its database are written whole and synced
// (server/durable-files.ts): the secret store's key, the embedded PostgreSQL's settings and
// bootstrap.json. What a test can see of that: the file holds all of what was written, with its
// mode; an exclusive write keeps the file that was there, whoever raced for it; and no draft is
// left beside it.
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { writeFileDurably } from '../../server/durable-files.ts';

const run = promisify(execFile);

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'durable-files-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('a file is replaced whole, with its mode, and leaves no draft behind', () => {
  const file = path.join(dir, 'settings.json');
  writeFileSync(file, '{"port":1}');
  expect(writeFileDurably(file, '{"port":2,"password":"p"}')).toBe(true);
  expect(readFileSync(file, 'utf8')).toBe('{"port":2,"password":"p"}');
  if (process.platform !== 'win32') expect(statSync(file).mode & 0o777).toBe(0o600);
  expect(readdirSync(dir)).toEqual(['settings.json']);
});

test('an exclusive write keeps the file that is there, and says it did not write', () => {
  const file = path.join(dir, 'secret-store.key');
  expect(writeFileDurably(file, 'first', { exclusive: true })).toBe(true);
  expect(writeFileDurably(file, 'second', { exclusive: true })).toBe(false);
  expect(readFileSync(file, 'utf8')).toBe('first');
  expect(readdirSync(dir)).toEqual(['secret-store.key']);
});

test('processes racing for the secret store key all read the one that was kept', async () => {
  // Each process writes a key only where none exists; whichever wins, every one reads that key.
  const module = pathToFileURL(path.resolve('server/drivers/embedded/secret-box.ts')).href;
  const script = `const { loadSecretBoxKey } = await import(${JSON.stringify(module)}); console.log(loadSecretBoxKey(${JSON.stringify(dir)}, undefined).toString('base64'));`;
  const keys = await Promise.all(
    Array.from({ length: 4 }, async () => (await run(process.execPath, ['--input-type=module', '-e', script])).stdout.trim()),
  );
  expect(keys[0]).toMatch(/^[A-Za-z0-9+/]{43}=$/);
  expect(new Set(keys).size).toBe(1);
  expect(readFileSync(path.join(dir, 'secret-store.key'), 'utf8')).toBe(keys[0]);
  expect(readdirSync(dir)).toEqual(['secret-store.key']);
});
