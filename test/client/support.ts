// Helpers of the client tests: an API to talk to (the Prism mock now; any server with the same
// contract later), a fetch that records what the client sends, and scripted fake fetches for
// failures a real server cannot be asked for.
import { startMock } from '../support/processes.ts';
import { createPlatformClient, type PlatformClient, type PlatformClientOptions } from '../../client/index.ts';

/** Where the client tests send requests. */
export interface ApiTarget {
  baseUrl: string;
  org: string;
  credential: string;
  stop: () => Promise<void>;
}

/** The organization and API key of the contract's examples (the mock accepts any bearer credential). */
export const exampleOrg = '3f6c1a2e-9b4d-4c7a-8e21-5d0b7f9a1c34';
export const exampleKey = 'cpk_3Ol_Svxj8s6AJH9dF10S5Aq_qj3r9CwRP2hDPHeY4P8';

/** Starts the Prism mock (`node scripts/mock.ts --port N`, as `npm run mock` runs it) as test/mock/mock.system.test.ts does. */
export async function startMockTarget(): Promise<ApiTarget> {
  const { mock, baseUrl } = await startMock(`/v1/orgs/${exampleOrg}`);
  return { baseUrl, org: exampleOrg, credential: exampleKey, stop: mock.stop };
}

/** A client of `target`; `options` override the target's settings. */
export function clientFor(target: ApiTarget, options: Partial<PlatformClientOptions> = {}): PlatformClient {
  return createPlatformClient({ baseUrl: target.baseUrl, org: target.org, credential: target.credential, ...options });
}

/** What a fetch was given: method, URL, headers and body text of one attempt. */
export interface Sent {
  method: string;
  url: URL;
  headers: Headers;
  body: string;
}

/** A fetch that passes every request to `inner` (default: the real fetch) and records it. */
export function recordingFetch(inner: (request: Request) => Promise<Response> = (request) => fetch(request)) {
  const sent: Sent[] = [];
  const recorder = async (request: Request) => {
    sent.push({
      method: request.method,
      url: new URL(request.url),
      headers: new Headers(request.headers),
      body: await request.clone().text(),
    });
    return inner(request);
  };
  return { fetch: recorder, sent };
}

/** One scripted answer: a response, or an error the fetch throws (a network failure). */
export type Step = Response | Error | ((request: Request) => Response | Promise<Response>);

/** A recording fetch that answers with `steps` in turn (the last one repeats). */
export function scriptedFetch(...steps: Step[]) {
  let index = 0;
  return recordingFetch(async (request) => {
    const step = steps[Math.min(index++, steps.length - 1)]!;
    if (step instanceof Error) throw step;
    return typeof step === 'function' ? step(request) : step.clone();
  });
}

export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return new Response(text, { status, headers: { 'Content-Type': 'application/json', ...headers } });
}

export function problemResponse(status: number, code: string, headers: Record<string, string> = {}): Response {
  const problem = {
    type: `https://docs.cloudplatform.dev/errors/${code}`,
    title: code,
    status,
    detail: `a ${code} problem`,
    code,
    request_id: 'req_fromProblem',
  };
  return new Response(JSON.stringify(problem), { status, headers: { 'Content-Type': 'application/problem+json', ...headers } });
}

/** A network failure as fetch reports it. */
export function networkError(): TypeError {
  return new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:9') });
}
