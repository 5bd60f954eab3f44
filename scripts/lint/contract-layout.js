// Spectral custom function: the layout rules of spec/README.md ("Rules every file follows"), run
// on the bundled contract. One function, one `check` per rule, so that each rule has its own
// name in the ruleset and its own findings. Plain JavaScript: Spectral loads it as is.

const JSON_TYPES = new Set(['string', 'integer', 'number', 'boolean', 'object', 'array', 'null']);
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** Every JSON Schema object of the document, with its path (security schemes are not schemas). */
function* schemas(node, path = []) {
  if (Array.isArray(node)) {
    for (const [index, item] of node.entries()) yield* schemas(item, [...path, index]);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  if (path.includes('securitySchemes')) return;
  const types = [node.type].flat();
  // `example`/`examples` hold data, not schemas.
  if (node.type !== undefined && types.every((type) => JSON_TYPES.has(type)) && !path.includes('examples') && path.at(-1) !== 'example') {
    yield { schema: node, path, types };
  }
  for (const [key, value] of Object.entries(node)) {
    if (key === 'examples' || key === 'example' || key === 'enum' || key === 'const' || key === 'default') continue;
    yield* schemas(value, [...path, key]);
  }
}

function* operations(document) {
  for (const [route, item] of Object.entries(document.paths ?? {})) {
    for (const method of METHODS) if (item[method]) yield { route, method, operation: item[method], path: ['paths', route, method] };
  }
}

const has = (object, key) => Object.prototype.hasOwnProperty.call(object, key);

const CHECKS = {
  strings(document) {
    const findings = [];
    for (const { schema, path, types } of schemas(document)) {
      if (!types.includes('string')) continue;
      if (!has(schema, 'maxLength') && !has(schema, 'enum') && !has(schema, 'const'))
        findings.push({ message: 'a string has maxLength (or is an enum or const)', path });
      if (!['format', 'pattern', 'enum', 'const'].some((key) => has(schema, key)))
        findings.push({ message: 'a string has one of format, pattern, enum or const', path });
    }
    return findings;
  },
  integers(document) {
    const findings = [];
    for (const { schema, path, types } of schemas(document)) {
      if (!types.includes('integer')) continue;
      if (!['int32', 'int64'].includes(schema.format)) findings.push({ message: 'an integer has format int32 or int64', path });
      if (!has(schema, 'minimum') || !has(schema, 'maximum')) findings.push({ message: 'an integer has minimum and maximum', path });
    }
    return findings;
  },
  arrays(document) {
    return [...schemas(document)]
      .filter(({ schema, types }) => types.includes('array') && !has(schema, 'maxItems'))
      .map(({ path }) => ({ message: 'an array has maxItems', path }));
  },
  objects(document) {
    const findings = [];
    for (const { schema, path, types } of schemas(document)) {
      if (!types.includes('object')) continue;
      // A free-form map (labels, audit snapshots) says how many entries it may have instead.
      const isMap = schema.additionalProperties !== undefined && schema.additionalProperties !== false;
      if (isMap) {
        if (!has(schema, 'maxProperties')) findings.push({ message: 'a map has maxProperties', path });
      } else {
        if (!Array.isArray(schema.required)) findings.push({ message: 'an object has a required list', path });
        if (schema.additionalProperties !== false) findings.push({ message: 'an object has additionalProperties: false', path });
      }
    }
    return findings;
  },
  scope(document) {
    const findings = [];
    for (const { method, operation, path } of operations(document)) {
      const open = Array.isArray(operation.security) && operation.security.length === 0;
      const expected = open ? 'none' : method === 'get' ? 'read' : 'write';
      if (operation['x-required-scope'] !== expected)
        findings.push({
          message: `x-required-scope is ${expected} (${open ? 'security: []' : method.toUpperCase()})`,
          path: [...path, 'x-required-scope'],
        });
      if (!/^[a-z]+(?:[A-Z0-9][a-z0-9]*)+$/.test(operation.operationId ?? ''))
        findings.push({ message: 'operationId is camelCase verbNoun', path: [...path, 'operationId'] });
    }
    return findings;
  },
  idempotency(document) {
    const findings = [];
    for (const { method, operation, path } of operations(document)) {
      if (method !== 'post') continue;
      const takesKey = (operation.parameters ?? []).some(
        (parameter) => parameter.$ref?.endsWith('/IdempotencyKey') || (parameter.in === 'header' && parameter.name === 'Idempotency-Key'),
      );
      if (!takesKey) findings.push({ message: 'a POST takes the shared Idempotency-Key parameter', path: [...path, 'parameters'] });
    }
    return findings;
  },
  statuses(document) {
    const findings = [];
    for (const { operation, path } of operations(document)) {
      const open = Array.isArray(operation.security) && operation.security.length === 0;
      const takesKey = (operation.parameters ?? []).some((parameter) => parameter.$ref?.endsWith('/IdempotencyKey'));
      const due = [
        '400',
        '405',
        '429',
        '431',
        '500',
        '503',
        ...(open ? [] : ['401', '403', '404']),
        ...(operation.requestBody ? ['413', '415'] : []),
        ...(takesKey ? ['422'] : []),
      ];
      const missing = due.filter((status) => !has(operation.responses ?? {}, status));
      if (missing.length > 0) findings.push({ message: `the operation declares ${missing.join(', ')}`, path: [...path, 'responses'] });
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (Number(status) >= 400 && !response.$ref)
          findings.push({
            message: 'an error response is a $ref to a named response (headers declared once)',
            path: [...path, 'responses', status],
          });
      }
    }
    return findings;
  },
  examples(document) {
    const findings = [];
    const visit = (node, path) => {
      if (Array.isArray(node)) return node.forEach((item, index) => visit(item, [...path, index]));
      if (node === null || typeof node !== 'object') return;
      if (path.at(-2) === 'content' && has(node, 'schema')) {
        if (has(node, 'example'))
          findings.push({ message: 'a media type has named examples (examples:), not example:', path: [...path, 'example'] });
        else if (!has(node, 'examples')) findings.push({ message: 'a media type has named examples', path });
        return;
      }
      for (const [key, value] of Object.entries(node)) if (key !== 'examples' && key !== 'example') visit(value, [...path, key]);
    };
    visit(document.paths ?? {}, ['paths']);
    visit(document.components ?? {}, ['components']);
    return findings;
  },
};

export default function contractLayout(document, options) {
  const check = CHECKS[options.check];
  if (!check) throw new Error(`contract-layout: no check ${options.check}`);
  return check(document);
}
