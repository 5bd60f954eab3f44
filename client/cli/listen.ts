// `cloud events listen --forward-to http://localhost:3000/hooks`: follows the organization's event
// log and delivers each new event to a local URL, signed as the platform signs its webhooks
// (Standard Webhooks, with a secret of this session), so that a receiver under development needs
// no public address. As `stripe listen` does.
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { PlatformClient } from '../client.ts';
import { stringifyJson } from '../json.ts';
import type { Schemas } from '../types.ts';
import { UsageError } from './args.ts';
import { EXIT, type Io } from './io.ts';

type EventOut = Schemas['EventOut'];

/**
 * Events are stamped when their change began: one committed later may carry an earlier time.
 * Each poll reads back this far before the newest event seen, and skips the ids already seen.
 */
const LOOKBACK_MS = 120_000;
/** Ids remembered, at most (the oldest are forgotten first). */
const SEEN_LIMIT = 10_000;

export interface ListenOptions {
  forwardTo: string;
  /** The session's signing secret; a new one when absent (printed at start). */
  secret?: string;
  /** Only these event types. */
  types?: string[];
  pollMs: number;
  /** Stop after this many seconds (scripts and tests); until interrupted when absent. */
  forSeconds?: number;
}

export async function listen(client: PlatformClient, options: ListenOptions, io: Io): Promise<number> {
  let target: URL;
  try {
    target = new URL(options.forwardTo);
  } catch {
    throw new UsageError(`--forward-to takes a URL such as http://localhost:3000/hooks, not "${options.forwardTo}"`);
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new UsageError('--forward-to takes an http or https URL');
  const secret = options.secret ?? `whsec_${randomBytes(32).toString('base64')}`;
  const signer = new Webhook(secret);

  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  io.interrupted?.addEventListener('abort', onSignal, { once: true });
  if (io.interrupted?.aborted) stop.abort();
  const deadline = options.forSeconds === undefined ? undefined : setTimeout(onSignal, options.forSeconds * 1000);
  const seen = new Set<string>();
  let newest = Date.now();
  /** The events of the log from the lookback before the newest on, newest first. */
  const recent = async (): Promise<EventOut[]> => {
    const items: EventOut[] = [];
    const since = new Date(newest - LOOKBACK_MS).toISOString();
    for await (const event of client.paginate('listEvents', { query: { since, limit: 200 } })) items.push(event);
    return items;
  };
  try {
    // Only what happens from now on: what the log holds already is not forwarded. Ready is said
    // once that is known: an event made after it is forwarded (said before, an event made while
    // the log was being read counted as already there, and was never forwarded).
    for (const event of await recent()) seen.add(event.id);
    io.stderr(`Ready. Forwarding events to ${target.href}; verify them with the signing secret ${secret}\n`);
    while (!stop.signal.aborted) {
      const fresh = (await recent()).filter((event) => !seen.has(event.id) && (!options.types || options.types.includes(event.type)));
      for (const event of fresh.reverse()) {
        seen.add(event.id);
        if (seen.size > SEEN_LIMIT) seen.delete(seen.values().next().value!);
        newest = Math.max(newest, Date.parse(event.created_at));
        await forward(event);
      }
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, options.pollMs);
        stop.signal.addEventListener('abort', () => (clearTimeout(timer), resolve(undefined)), { once: true });
      });
    }
    return EXIT.ok;
  } finally {
    process.off('SIGINT', onSignal);
    io.interrupted?.removeEventListener('abort', onSignal);
    if (deadline) clearTimeout(deadline);
  }

  async function forward(event: EventOut): Promise<void> {
    const body = stringifyJson(event)!;
    const now = new Date();
    const started = performance.now();
    try {
      const answer = await fetch(target, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          'content-type': 'application/json',
          'webhook-id': event.id,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': signer.sign(event.id, now, body),
        },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      await answer.body?.cancel();
      io.stderr(
        `${event.created_at}  ${event.type.padEnd(34)} ${event.id}  → ${answer.status} (${Math.round(performance.now() - started)} ms)\n`,
      );
    } catch (error) {
      io.stderr(`${event.created_at}  ${event.type.padEnd(34)} ${event.id}  → failed: ${(error as Error).message}\n`);
    }
  }
}
