// Local `$ref`s as the contract's scripts follow them (scripts/lib/json-pointer.ts).
import { describe, expect, test } from 'vitest';
import { localRef, refSegments, refTarget } from '../../scripts/lib/json-pointer.ts';

const document = {
  paths: { '/vms/{vm_id}': { get: { operationId: 'getVm' } } },
  components: { schemas: { 'Money~Amount': { type: 'string' }, 'with space': { type: 'integer' } } },
  tags: [{ name: 'compute' }],
};

describe('a local $ref', () => {
  test('names its keys unescaped: ~1 is a slash, ~0 a tilde, and a URI fragment is percent-decoded', () => {
    expect(refSegments('#/paths/~1vms~1{vm_id}/get')).toEqual(['paths', '/vms/{vm_id}', 'get']);
    expect(refTarget(document, '#/paths/~1vms~1%7Bvm_id%7D/get')).toEqual({ operationId: 'getVm' });
    expect(refTarget(document, '#/components/schemas/Money~0Amount')).toEqual({ type: 'string' });
    expect(refTarget(document, '#/components/schemas/with%20space')).toEqual({ type: 'integer' });
    expect(refTarget(document, '#/tags/0/name')).toBe('compute');
  });

  test('reaches nothing where a key is missing, or is only inherited', () => {
    expect(refTarget(document, '#/components/schemas/Vm')).toBeUndefined();
    expect(refTarget(document, '#/paths/constructor')).toBeUndefined();
    expect(refTarget(document, '#/tags/length')).toBe(1);
    expect(refTarget(document, '#/tags/0/name/0')).toBeUndefined();
  });

  test('is only one that starts with #: another document is not followed', () => {
    expect(refSegments('other.yaml#/components/schemas/Vm')).toBeUndefined();
    expect(refTarget(document, 'other.yaml#/components')).toBeUndefined();
    expect(refTarget(document, '#')).toBe(document);
  });

  test('is what localRef writes for a place, and leads back to it', () => {
    const place = ['paths', '/vms/{vm_id}', 'get'];
    expect(localRef(place)).toBe('#/paths/~1vms~1{vm_id}/get');
    expect(refTarget(document, localRef(place))).toBe(document.paths['/vms/{vm_id}'].get);
    expect(localRef(['components', 'schemas', 'Money~Amount'])).toBe('#/components/schemas/Money~0Amount');
  });
});
