import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * What becomes of the rest of a body the endpoint stopped reading: a request refused before its
 * upload was read (no such bucket, a missing SSE-C key, a quota), answered with an error.
 *
 * The client is still sending that body and reads the answer only if its writes do not fail
 * first. Answered at once and closed, the connection had unread bytes, which makes the system
 * reset it: the client's next write failed with EPIPE before it saw the answer (the AWS SDK
 * reports a TimeoutError; once in 30 refused 16 MiB uploads here, more on a busy machine). So a
 * body up to `DRAIN_LIMIT` is read to its end and thrown away first, for at most `LINGER_MS`,
 * and answered then. A larger one is answered at once with `Connection: close`, as S3 does:
 * reading gigabytes to refuse them costs more than the client's retry. So is a client that
 * stopped sending.
 *
 * A client that asked for `100 Continue` and was not sent it may still send the body: the AWS SDK
 * given its own agent sends it at once, curl after a second. Its body is read like any other if
 * its first bytes come within `CONTINUE_GRACE_MS`; if none come, it is waiting, and is answered
 * then with `Connection: close` (it will send nothing more on that connection).
 */
const DRAIN_LIMIT = 64 * 1024 * 1024;
const LINGER_MS = 10_000;
const CONTINUE_GRACE_MS = 500;

/** Answers to which `100 Continue` was sent: their client is sending the body. */
const continued = new WeakSet<ServerResponse>();

/** Sends `100 Continue` if the client waits for it (the body is wanted now). */
export function askForBody(req: IncomingMessage, res: ServerResponse): void {
  if (!/100-continue/i.test(req.headers.expect ?? '') || continued.has(res)) return;
  continued.add(res);
  res.writeContinue();
}

/**
 * Sends the answer to an error (`send`): at once, or once what is left of the body has been read
 * (with `Connection: close` when it could not be). At once means in this tick: a stalled body's
 * pipeline is about to destroy the request, if it has not already.
 */
export function answerAfterBody(req: IncomingMessage, res: ServerResponse, clientStalled: boolean, send: () => void): void {
  if (req.complete) return send();
  if (req.destroyed) {
    // Its reading was stopped midway (a stalled body's pipeline has destroyed it), yet the
    // connection can still carry the answer: it closes after it, or it would stay open for the
    // next request until the keep-alive timeout, with what is left of the body read as one.
    res.setHeader('Connection', 'close');
    return send();
  }
  const waitingForContinue = /100-continue/i.test(req.headers.expect ?? '') && !continued.has(res);
  const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
  if (clientStalled || (declared !== undefined && !(declared <= DRAIN_LIMIT))) {
    res.setHeader('Connection', 'close');
    send();
    // Node closes the connection once the answer is written; until then, the bytes are read.
    req.on('end', () => undefined).resume();
    return;
  }
  let discarded = 0;
  let answered = false;
  const answer = (whole: boolean) => {
    clearTimeout(linger);
    clearTimeout(grace);
    req.off('data', onData);
    if (answered) return;
    answered = true;
    if (!whole) res.setHeader('Connection', 'close');
    if (!req.socket?.destroyed) send();
  };
  const onData = (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DRAIN_LIMIT) answer(false);
  };
  const linger = setTimeout(() => answer(false), LINGER_MS);
  const grace = waitingForContinue ? setTimeout(() => discarded === 0 && answer(false), CONTINUE_GRACE_MS) : undefined;
  req.on('data', onData);
  req.once('end', () => answer(true));
  req.once('close', () => answer(req.complete));
  req.resume();
}
