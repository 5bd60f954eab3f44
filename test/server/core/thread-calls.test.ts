// Calls across threads (core/thread-calls.ts): what the S3 endpoint's thread asks of the main
// thread comes back as it would from a call in the same thread, refusals and outages included.
import { MessageChannel } from 'node:worker_threads';
import { afterEach, describe, expect, test } from 'vitest';
import { DomainError } from '../../../server/core/errors.ts';
import { answerCalls, callsTo } from '../../../server/core/thread-calls.ts';
import { isConcurrencyConflict, isDatabaseError, isDatabaseUnavailable, markDatabaseError } from '../../../server/db/unavailable.ts';

interface Buckets {
  named(orgId: string, name: string): Promise<{ name: string; createdAt: Date; tags: Set<string> } | undefined>;
  create(name: string): Promise<string>;
  secret(): Promise<string>;
}

const channels: MessageChannel[] = [];
afterEach(() => {
  for (const channel of channels.splice(0)) channel.port1.close();
});

function connected(target: Buckets) {
  const channel = new MessageChannel();
  channels.push(channel);
  answerCalls<Buckets>(channel.port1, target, ['named', 'create']);
  return callsTo<Buckets, 'named' | 'create' | 'secret'>(channel.port2, ['named', 'create', 'secret']);
}

describe('calls across threads', () => {
  test('answers arrive with their Dates and Sets, in any order the work finishes', async () => {
    const createdAt = new Date('2026-11-27T03:00:00Z');
    const calls = connected({
      named: async (_org, name) => {
        await new Promise((resolve) => setTimeout(resolve, name === 'slow' ? 30 : 0));
        return name === 'none' ? undefined : { name, createdAt, tags: new Set(['a', 'b']) };
      },
      create: async (name) => `made ${name}`,
      secret: async () => 'never crosses',
    });
    const [slow, fast, none] = await Promise.all([calls.named('o', 'slow'), calls.named('o', 'fast'), calls.named('o', 'none')]);
    expect(slow).toEqual({ name: 'slow', createdAt, tags: new Set(['a', 'b']) });
    expect(slow!.createdAt).toBeInstanceOf(Date);
    expect(fast!.name).toBe('fast');
    expect(none).toBeUndefined();
    expect(await calls.create('x')).toBe('made x');
  });

  test("a refusal is the caller's DomainError, with its kind, code and field errors", async () => {
    const calls = connected({
      named: async () => undefined,
      create: async () => {
        throw new DomainError('conflict', 'bucket_name_taken', 'Conflict', 'The name is taken.', [
          { pointer: '/name', detail: 'is taken' },
        ]);
      },
      secret: async () => '',
    });
    const refused = await calls.create('x').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DomainError);
    expect(refused).toMatchObject({ kind: 'conflict', code: 'bucket_name_taken', detail: 'The name is taken.' });
    expect((refused as DomainError).fieldErrors).toHaveLength(1);
  });

  test('an outage and a collision are still recognised on the calling side', async () => {
    let failure: Error = new Error('unset');
    const calls = connected({
      named: async () => {
        throw failure;
      },
      create: async () => '',
      secret: async () => '',
    });
    failure = Object.assign(new Error('connect ENOENT /tmp/.s.PGSQL.5432'), { code: 'ENOENT', syscall: 'connect' });
    expect(isDatabaseUnavailable(await calls.named('o', 'b').catch((error: unknown) => error))).toBe(true);
    failure = Object.assign(new Error('deadlock detected'), { code: '40P01' });
    expect(isConcurrencyConflict(await calls.named('o', 'b').catch((error: unknown) => error))).toBe(true);
    // An outage known only by a wrapper's cause (the cause does not cross), and a reset a query
    // failed with (a reset of the caller's own connection is another matter): still told apart.
    const terminated = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    failure = new Error('the store could not record the upload', { cause: terminated });
    expect(isDatabaseUnavailable(await calls.named('o', 'b').catch((error: unknown) => error))).toBe(true);
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    markDatabaseError(reset);
    failure = reset;
    expect(isDatabaseError(await calls.named('o', 'b').catch((error: unknown) => error))).toBe(true);
    failure = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    expect(isDatabaseError(await calls.named('o', 'b').catch((error: unknown) => error))).toBe(false);
    failure = new Error('a bug');
    expect(isDatabaseUnavailable(await calls.named('o', 'b').catch((error: unknown) => error))).toBe(false);
  });

  test('only the methods offered are answered; calls waiting when the port closes are refused', async () => {
    const channel = new MessageChannel();
    channels.push(channel);
    let release = () => {};
    answerCalls<Buckets>(
      channel.port1,
      {
        named: () => new Promise((resolve) => (release = () => resolve(undefined))),
        create: async () => '',
        secret: async () => 'the secret',
      },
      ['named', 'create'],
    );
    const calls = callsTo<Buckets, 'named' | 'secret'>(channel.port2, ['named', 'secret']);
    await expect(calls.secret()).rejects.toThrow(/no method secret/);
    const waiting = calls.named('o', 'b');
    channel.port2.close();
    await expect(waiting).rejects.toThrow(/gone/);
    release();
  });
});
