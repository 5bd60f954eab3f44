import type { Response } from 'express';
import { stringify } from 'lossless-json';

/**
 * Sends a JSON body with exact integers: a bigint (the spend budget up to 2^63-1) is written as
 * its digits. The response validator checks a copy of the body in which bigints are numbers
 * (JSON Schema validators know nothing of bigint); what goes on the wire is the exact text.
 */
export function sendJson(res: Response, status: number, body: unknown, mediaType = 'application/json'): void {
  res.status(status).type(mediaType);
  if (body === undefined) {
    res.end();
    return;
  }
  const exactText = stringify(body) ?? 'null';
  const send = res.send;
  // res.json runs the validator's response hook, then calls res.send with its own JSON text,
  // which is swapped for the exact text. When the hook refuses the body, res.send is never
  // reached and the error handler answers instead, with res.send restored.
  res.send = ((_text: unknown) => send.call(res, exactText)) as Response['send'];
  try {
    res.json(withNumbers(body));
  } finally {
    res.send = send;
  }
}

function withNumbers(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(withNumbers);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, withNumbers(item)]));
  }
  return value;
}
