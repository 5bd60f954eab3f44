import { readFileSync } from 'node:fs';
import { parse, stringify } from 'lossless-json';
import { bundlePath } from './bundle.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/**
 * The document Prism serves: the bundle without what Prism would check of a request (parameters,
 * request body schemas, security). The mock proxy checks every request with the server's own stages
 * (mock-proxy.ts) before Prism sees it; Prism only chooses and serves the answer. Two judges
 * would disagree where their validators do: Prism refused a spend budget of 9223372036854775807
 * that the server accepts, and worded and placed every error its own way.
 */
export function mockDocument(): string {
  const document = parse(readFileSync(bundlePath, 'utf8')) as Record<string, unknown>;
  delete document.security;
  for (const item of Object.values(document.paths as Record<string, Record<string, unknown>>)) {
    delete item.parameters;
    for (const method of METHODS) {
      const operation = item[method] as Record<string, unknown> | undefined;
      if (!operation) continue;
      delete operation.parameters;
      delete operation.security;
      // Its media types stay (Prism refuses a body an operation declares none for), each taking any JSON.
      const body = operation.requestBody as { required?: boolean; content?: Record<string, { schema?: unknown }> } | undefined;
      if (body) {
        body.required = false;
        for (const media of Object.values(body.content ?? {})) media.schema = {};
      }
    }
  }
  return `${stringify(document, undefined, 2)}\n`;
}
