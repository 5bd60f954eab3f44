// The layout rule that lives in the sources rather than the bundle (the bundle inlines it): every
// method of every path in spec/openapi.yaml is a `$ref` to its operation's own file under
// resources/<area>/, named after its operationId.
import { parse } from 'yaml';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

export interface LayoutFinding {
  where: string;
  message: string;
}

export function rootLayoutFindings(rootYaml: string): LayoutFinding[] {
  const root = parse(rootYaml) as { paths?: Record<string, Record<string, unknown>> };
  const findings: LayoutFinding[] = [];
  for (const [route, item] of Object.entries(root.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item[method] as Record<string, unknown> | undefined;
      if (operation === undefined) continue;
      const ref = operation.$ref;
      const where = `spec/openapi.yaml#/paths/${route}/${method}`;
      if (typeof ref !== 'string' || Object.keys(operation).length !== 1) {
        findings.push({ where, message: 'a path method is only a $ref to its operation file' });
      } else if (!/^resources\/[a-z-]+\/(?:[a-z-]+\/)?[a-z][A-Za-z0-9]*\.yaml$/.test(ref)) {
        findings.push({ where, message: `a path method refers to resources/<area>/<operationId>.yaml, not ${ref}` });
      }
    }
  }
  return findings;
}
