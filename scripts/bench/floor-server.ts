// The stack floor: what the real server's stack costs with nothing of the platform in it.
// Express 5 and express-openapi-validator with the project's own options (request and response
// validation on) on the contract the server loads, serving answers recorded from the real server: no
// database, authentication, audit, idempotency or logging. `npm run bench` starts it with
// BENCH_FLOOR_ROUTES naming a JSON file of {method, path, status, body}.
import { readFileSync } from 'node:fs';
import express, { type ErrorRequestHandler } from 'express';
import { contractValidator } from '../../server/http/validation.ts';

export interface RecordedAnswer {
  method: 'get' | 'post' | 'put';
  /** The path as requested (no query). */
  path: string;
  status: number;
  /** The JSON text the real server answered. */
  body: string;
}

const answers = JSON.parse(readFileSync(process.env.BENCH_FLOOR_ROUTES!, 'utf8')) as RecordedAnswer[];
const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
app.use(express.json());
app.use(contractValidator({ validateResponses: true }));
for (const answer of answers) {
  // Parsed once: each request pays for serializing and validating the body, as the real one does.
  const body: unknown = JSON.parse(answer.body);
  app[answer.method](answer.path, (_req, res) => void res.status(answer.status).json(body));
}
const failed: ErrorRequestHandler = (error: { status?: number; message?: string }, _req, res, _next) => {
  res.status(error.status ?? 500).json({ code: 'floor_error', detail: error.message });
};
app.use(failed);
app.listen(Number(process.env.PORT), '127.0.0.1');
