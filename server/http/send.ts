import express, { type NextFunction, type Request, type Response } from 'express';
import { stringify } from 'lossless-json';

/** The text `sendJson` wrote for a response, waiting for `res.json` to send it. */
const preparedText = new WeakMap<Response, string>();
const expressJson = express.response.json;

/**
 * First in the chain: `res.json` sends the text `sendJson` prepared instead of serializing the
 * body again. The response validator wraps `res.json` (it validates the object, then calls what
 * `res.json` was when it was installed, which is this), so each body is serialized once and
 * validated as the very object that was serialized. A `res.json` call that did not come through
 * `sendJson` is served as Express serves it.
 */
export function preparedJson(_req: Request, res: Response, next: NextFunction): void {
  res.json = sendPrepared;
  next();
}

function sendPrepared(this: Response, body: unknown): Response {
  const text = preparedText.get(this);
  if (text === undefined) return expressJson.call(this, body);
  preparedText.delete(this);
  // Written as it is. Express's res.send would parse and format the Content-Type again to add
  // the charset, check the request's freshness (the API sets neither ETag nor Last-Modified, so
  // no answer is ever fresh) and, for a body of 1,000 characters or more, copy it into a Buffer
  // first. HEAD, 204 and 304 keep Express's handling (no body, and the headers it strips).
  if (this.req.method === 'HEAD' || this.statusCode === 204 || this.statusCode === 304) return this.send(text);
  const type = this.get('Content-Type');
  if (type !== undefined && !/;\s*charset=/i.test(type)) this.set('Content-Type', `${type}; charset=utf-8`);
  this.set('Content-Length', String(Buffer.byteLength(text)));
  const socket = this.socket;
  if (text.length < SEPARATE_HEAD_FROM_CHARS || !socket) {
    this.end(text);
    return this;
  }
  // Node writes the head and a string body in one piece by concatenating them: a copy of the whole
  // body in V8's young generation (flattened when written), a tenth of what a list of 100 allocated.
  // With the socket corked, the head is flushed on its own and the body follows: the two strings go
  // out in one writev, copied once, outside V8's heap.
  socket.cork();
  this.flushHeaders();
  this.end(text);
  socket.uncork();
  return this;
}

/** Below this, the concatenated copy is small and one write of one string is cheapest. */
const SEPARATE_HEAD_FROM_CHARS = 16 * 1024;

/**
 * Sends a JSON body with exact integers: a bigint (the spend budget up to 2^63-1) is written as
 * its digits. Bodies without one (nearly all) are written by JSON.stringify, which refuses a
 * bigint: only then is the exact writer used, and the validator sees a copy in which bigints are
 * numbers (JSON Schema validators know nothing of bigint); the wire has the exact text either way.
 * When the validator refuses the body, the prepared text is never sent: the error handler answers.
 */
export function sendJson(res: Response, status: number, body: unknown, mediaType = 'application/json'): void {
  res.status(status).type(mediaType);
  if (body === undefined) {
    res.end();
    return;
  }
  let text: string;
  let validated: unknown = body;
  try {
    text = JSON.stringify(body);
  } catch (error) {
    // "Do not know how to serialize a BigInt"; anything else (a cycle) is a bug to report.
    if (!(error instanceof TypeError) || !containsBigInt(body)) throw error;
    text = stringify(body) ?? 'null';
    validated = withNumbers(body);
  }
  // A newline ends every JSON answer, as it ends every problem document (errors.ts: problemText).
  preparedText.set(res, `${text}\n`);
  res.json(validated);
}

function containsBigInt(value: unknown): boolean {
  if (typeof value === 'bigint') return true;
  if (value !== null && typeof value === 'object') return Object.values(value).some(containsBigInt);
  return false;
}

function withNumbers(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(withNumbers);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, withNumbers(item)]));
  }
  return value;
}
