// The CLI's command table is the contract's: every operation is a command, each named once, and
// each flag carries what the contract says of its field.
import { describe, expect, test } from 'vitest';
import { operationRoutes } from '../../generated/operations.ts';
import { commands, findCommand } from '../../client/cli/commands.ts';
import { nearest } from '../../client/cli/suggest.ts';

describe('the command table', () => {
  test('every operation of the contract is a command, each named once', () => {
    const all = commands();
    expect(all.map((command) => command.operationId).sort()).toEqual(Object.keys(operationRoutes).sort());
    expect(new Set(all.map((command) => `${command.group} ${command.verb}`)).size).toBe(all.length);
    expect(findCommand('vm', 'create')?.operationId).toBe('createVm');
    expect(findCommand('bucket', 'list')?.operationId).toBe('listBuckets');
    expect(findCommand('account', 'get')?.operationId).toBe('getAccount');
  });

  test("flags carry the contract's type, bounds, enum, default, example and whether they are required", () => {
    const flags = Object.fromEntries(findCommand('vm', 'create')!.flags.map((flag) => [flag.flag, flag]));
    expect(flags['memory-mb']).toMatchObject({ kind: 'integer', type: 'integer 512..262144', required: true, example: 4096 });
    expect(flags['workload-type']).toMatchObject({ kind: 'string', required: false, enum: ['customer', 'infra'] });
    expect(flags['labels']).toMatchObject({ kind: 'map', required: false });
    expect(flags['ssh-keys']).toMatchObject({ kind: 'list', required: false });
    const limit = findCommand('vm', 'list')!.flags.find((flag) => flag.flag === 'limit');
    expect(limit).toMatchObject({ in: 'query', default: 50, type: 'integer 1..200' });
  });

  test('"did you mean" finds near words, nearest first, and nothing for a word far from all', () => {
    expect(nearest('lst', ['list', 'get', 'delete'])).toEqual(['list']);
    expect(nearest('memory', ['memory-mb', 'disk-gb', 'vcpus'])).toEqual(['memory-mb']);
    expect(nearest('bukcet', ['bucket', 'vm', 'billing'])).toEqual(['bucket']);
    expect(nearest('zzzzzz', ['bucket', 'vm', 'billing'])).toEqual([]);
  });
});
