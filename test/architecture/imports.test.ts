// The structure of the server's imports: every module imports only from its own layer or a lower
// one, and no group of modules imports itself in a circle. Read from the source, so that a change
// that breaks the layering fails the suite, not a later reading.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';

const root = path.resolve(import.meta.dirname, '..', '..');
const serverDir = path.join(root, 'server');

/**
 * The layers, lowest first. A module of layer N may import layers 0..N. Composition (the app, the
 * platform, the entry points) sits on top; HTTP above the areas, which it serves; areas above the
 * engine and drivers they use; the core (rules shared by every area) above the database.
 */
const LAYERS: Array<{ name: string; matches: (file: string) => boolean }> = [
  {
    name: 'foundation',
    matches: (file) =>
      ['server/logging.ts', 'server/config.ts', 'server/metrics.ts', 'server/node-http.ts', 'server/durable-files.ts'].includes(file) ||
      file.startsWith('server/db/'),
  },
  { name: 'core', matches: (file) => file.startsWith('server/core/') },
  { name: 'drivers', matches: (file) => file.startsWith('server/drivers/') },
  { name: 'engine', matches: (file) => file.startsWith('server/engine/') },

  { name: 'areas', matches: (file) => file.startsWith('server/areas/') },
  { name: 'http', matches: (file) => file.startsWith('server/http/') },
  { name: 'composition', matches: () => true },
];

const layerOf = (file: string): number => LAYERS.findIndex((layer) => layer.matches(file));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return entry.endsWith('.ts') ? [full] : [];
  });
}

/** Each server module and the server modules it imports (type-only imports included). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const full of sourceFiles(serverDir)) {
    const text = readFileSync(full, 'utf8');
    const targets = [...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/gms)]
      .map((match) => path.relative(root, path.resolve(path.dirname(full), match[1]!)))
      .filter((target) => target.startsWith('server/'));
    graph.set(path.relative(root, full), targets);
  }
  return graph;
}

/** The strongly connected groups of more than one module (or a module importing itself). */
function circles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const group: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        group.push(member);
      } while (member !== node);
      if (group.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(group.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

describe('the structure of the server', () => {
  const graph = importGraph();

  test('the graph is read (a broken reader would pass everything)', () => {
    expect(graph.size).toBeGreaterThan(50);
    expect(graph.get('server/app.ts')).toContain('server/http/dispatch.ts');
  });

  test('no module imports from a higher layer', () => {
    const violations = [...graph].flatMap(([file, targets]) =>
      targets
        .filter((target) => layerOf(target) > layerOf(file))
        .map((target) => `${file} (${LAYERS[layerOf(file)]!.name}) imports ${target} (${LAYERS[layerOf(target)]!.name})`),
    );
    expect(violations).toEqual([]);
  });

  test('an area imports no other area (they meet through AreaDependencies and the platform)', () => {
    const areaOf = (file: string) => /^server\/areas\/([^/]+)\//.exec(file)?.[1];
    const violations = [...graph].flatMap(([file, targets]) =>
      targets
        .filter((target) => areaOf(file) && areaOf(target) && areaOf(file) !== areaOf(target))
        .map((target) => `${file} imports ${target}`),
    );
    expect(violations).toEqual([]);
  });

  test('no circles', () => {
    expect(circles(graph)).toEqual([]);
  });

  test('the layering check finds a planted violation and a planted circle', () => {
    const planted = new Map(graph);
    planted.set('server/core/audit.ts', [...(graph.get('server/core/audit.ts') ?? []), 'server/http/errors.ts']);
    planted.set('server/http/errors.ts', [...(graph.get('server/http/errors.ts') ?? []), 'server/core/audit.ts']);
    expect(layerOf('server/http/errors.ts')).toBeGreaterThan(layerOf('server/core/audit.ts'));
    expect(circles(planted).some((group) => group.includes('server/core/audit.ts') && group.includes('server/http/errors.ts'))).toBe(true);
  });
});
