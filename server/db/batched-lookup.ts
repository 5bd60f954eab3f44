/**
 * A lookup by key whose calls made in one turn of the event loop are answered by one query.
 *
 * The engine starts the attempts of everything one claim took in the same turn, and each reads its
 * resource first: one query for them all is one statement, one connection and one wake-up of
 * PostgreSQL's backend instead of one each (on two cores, the wake-ups cost more than the reads).
 * `load` answers the rows it found, by key; a key it did not find is answered undefined.
 */
export function batchedLookup<Key, Value>(load: (keys: Key[]) => Promise<Map<Key, Value>>): (key: Key) => Promise<Value | undefined> {
  let pending: Map<Key, Array<{ resolve: (value: Value | undefined) => void; reject: (error: unknown) => void }>> | undefined;

  const flush = (batch: NonNullable<typeof pending>) => {
    load([...batch.keys()]).then(
      (found) => batch.forEach((waiting, key) => waiting.forEach(({ resolve }) => resolve(found.get(key)))),
      (error: unknown) => batch.forEach((waiting) => waiting.forEach(({ reject }) => reject(error))),
    );
  };

  return (key) =>
    new Promise((resolve, reject) => {
      if (!pending) {
        const batch = new Map<Key, Array<{ resolve: (value: Value | undefined) => void; reject: (error: unknown) => void }>>();
        pending = batch;
        // After the turn's other callers: setImmediate runs once the current callbacks and their microtasks are done.
        setImmediate(() => {
          pending = undefined;
          flush(batch);
        });
      }
      const waiting = pending.get(key);
      if (waiting) waiting.push({ resolve, reject });
      else pending.set(key, [{ resolve, reject }]);
    });
}

/**
 * A call whose calls made in one turn of the event loop are made as one (`run` answers each input's
 * output, in their order): the simulated hypervisor's servers of the attempts one claim started,
 * made by one statement.
 */
export function batchedCall<Input, Output>(run: (inputs: Input[]) => Promise<Output[]>): (input: Input) => Promise<Output> {
  type Call = { input: Input; resolve: (output: Output) => void; reject: (error: unknown) => void };
  let pending: Call[] | undefined;
  return (input) =>
    new Promise((resolve, reject) => {
      if (!pending) {
        const batch: Call[] = [];
        pending = batch;
        setImmediate(() => {
          pending = undefined;
          run(batch.map((call) => call.input)).then(
            (outputs) => batch.forEach((call, index) => call.resolve(outputs[index]!)),
            (error: unknown) => batch.forEach((call) => call.reject(error)),
          );
        });
      }
      pending.push({ input, resolve, reject });
    });
}

/**
 * A call made at once while fewer than `leaders` runs of it are under way, and otherwise made
 * together with every call that arrives meanwhile, as one run (`maxBatch` calls at most): the group
 * commit of a statement each call needs durable before it goes on. At rest a call waits for no
 * one; under load the calls waiting share one statement, one transaction and its WAL flush. `run`
 * answers each input's output, in their order; should it fail, every call of the run fails.
 */
export function groupedCall<Input, Output>(
  run: (inputs: Input[]) => Promise<Output[]>,
  { leaders = 2, maxBatch = 64 }: { leaders?: number; maxBatch?: number } = {},
): (input: Input) => Promise<Output> {
  type Call = { input: Input; resolve: (output: Output) => void; reject: (error: unknown) => void };
  const waiting: Call[] = [];
  let running = 0;
  const lead = async (): Promise<void> => {
    running++;
    try {
      while (waiting.length > 0) {
        const batch = waiting.splice(0, maxBatch);
        await run(batch.map((call) => call.input)).then(
          (outputs) => batch.forEach((call, index) => call.resolve(outputs[index]!)),
          (error: unknown) => batch.forEach((call) => call.reject(error)),
        );
      }
    } finally {
      running--;
    }
  };
  return (input) =>
    new Promise((resolve, reject) => {
      waiting.push({ input, resolve, reject });
      if (running < leaders) void lead();
    });
}
