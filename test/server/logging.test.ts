// The server's logs: loggers share the process's standard output rather than each adding to it.
import { expect, test } from 'vitest';
import { createLogger } from '../../server/logging.ts';

test('loggers made one after another share standard output: one listener on process.stdout, not one each', () => {
  const before = process.stdout.listenerCount('error');
  for (let count = 0; count < 15; count += 1) createLogger('silent');
  // The first logger of the process adds the one listener; this worker may have made it already.
  expect(process.stdout.listenerCount('error') - before).toBeLessThanOrEqual(1);
});
