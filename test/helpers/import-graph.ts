import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * The import graph of the source tree, read without compiling anything: `ts.preProcessFile` lists every
 * module specifier of a file (`import`, `import type`, `export … from`, `import()`, `import x = require()`),
 * type-only ones included. Paths are relative to the repository root, with `/` separators.
 */
export interface ImportEdge {
  /** The importing file, e.g. `src/domain/feeds/feed-service.ts`. */
  from: string;
  /** The imported file (relative specifiers resolved), or the bare specifier of a package (`zod`, `node:fs`). */
  to: string;
  /** As written in the source. */
  specifier: string;
  /** 1-based. */
  line: number;
  /** A relative specifier (`./x.js`, `../y.js`): `to` is a file of the tree. */
  relative: boolean;
  /** For a relative specifier: whether a file was found for it. */
  resolved: boolean;
}

export interface ImportGraph {
  /** Every source file read (relative paths), sorted. */
  files: string[];
  edges: ImportEdge[];
}

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const SOURCE_FILE = /\.(?:[cm]?ts|[cm]?js)$/;

/** Every file under the given folders (relative to `root`), sorted; `filter` picks by relative path. */
export function listFiles(root: string, folders: string[], filter: (path: string) => boolean = () => true): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else {
        const rel = toPosix(relative(root, full));
        if (filter(rel)) out.push(rel);
      }
    }
  };
  for (const folder of folders) if (existsSync(join(root, folder))) walk(join(root, folder));
  return out.sort();
}

function toPosix(path: string): string {
  return path.split(sep).join('/');
}

/**
 * Where a relative specifier points. Specifiers are written as the emitted JavaScript is named (`./x.js`),
 * so `.js` stands for the `.ts` source (`.mjs` for `.mts`, `.cjs` for `.cts`); a `.d.ts` beside it, the
 * file as written (`.json`) or a folder's `index.ts` are tried next.
 */
function resolveRelative(root: string, fromFile: string, specifier: string): { path: string; found: boolean } {
  const target = posix.normalize(posix.join(posix.dirname(fromFile), specifier));
  const candidates: string[] = [];
  const swapped = target.replace(/\.js$/, '.ts').replace(/\.mjs$/, '.mts').replace(/\.cjs$/, '.cts');
  candidates.push(swapped);
  if (/\.[cm]?js$/.test(target)) candidates.push(target.replace(/\.[cm]?js$/, '.d.ts'));
  candidates.push(target, `${target}.ts`, `${target}/index.ts`);
  for (const candidate of candidates) {
    const full = join(root, candidate);
    if (existsSync(full) && statSync(full).isFile()) return { path: candidate, found: true };
  }
  return { path: swapped, found: false };
}

/** The import graph of the source files under `folders` (relative to `root`). */
export function readImportGraph(root: string, folders: string[]): ImportGraph {
  const files = listFiles(root, folders, (path) => SOURCE_FILE.test(path));
  const edges: ImportEdge[] = [];
  for (const from of files) {
    const text = readFileSync(join(root, from), 'utf8');
    const { importedFiles } = ts.preProcessFile(text, true, true);
    for (const { fileName: specifier, pos } of importedFiles) {
      const line = text.slice(0, pos).split('\n').length;
      if (specifier.startsWith('./') || specifier.startsWith('../')) {
        const { path, found } = resolveRelative(root, from, specifier);
        edges.push({ from, to: path, specifier, line, relative: true, resolved: found });
      } else {
        edges.push({ from, to: specifier, specifier, line, relative: false, resolved: true });
      }
    }
  }
  return { files, edges };
}

/**
 * Strongly connected components (Tarjan) of the graph over `nodes`, keeping only edges between them. Returns
 * the components that are cycles: more than one file, or one file importing itself. Each is sorted, and the
 * list is sorted by its first file.
 */
export function findCycles(nodes: string[], edges: Array<{ from: string; to: string }>): string[][] {
  const inGraph = new Set(nodes);
  const next = new Map<string, string[]>(nodes.map((n) => [n, []]));
  const selfLoops = new Set<string>();
  for (const { from, to } of edges) {
    if (!inGraph.has(from) || !inGraph.has(to)) continue;
    next.get(from)!.push(to);
    if (from === to) selfLoops.add(from);
  }

  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];

  // Iterative, so a long chain of imports cannot exhaust the call stack.
  for (const start of nodes) {
    if (index.has(start)) continue;
    const work: Array<{ node: string; child: number }> = [{ node: start, child: 0 }];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const children = next.get(frame.node)!;
      if (frame.child < children.length) {
        const child = children[frame.child++]!;
        if (!index.has(child)) {
          index.set(child, counter);
          low.set(child, counter++);
          stack.push(child);
          onStack.add(child);
          work.push({ node: child, child: 0 });
        } else if (onStack.has(child)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(child)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1 || selfLoops.has(frame.node)) components.push(component.sort());
      }
    }
  }
  return components.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/**
 * One shortest cycle through `members` (a component of `findCycles`) starting at its first file, as the list of
 * files in import order, the first repeated at the end.
 */
export function shortestCycle(members: string[], edges: Array<{ from: string; to: string }>): string[] {
  const inside = new Set(members);
  const start = members[0]!;
  const next = new Map<string, string[]>();
  for (const { from, to } of edges) {
    if (inside.has(from) && inside.has(to)) next.set(from, [...(next.get(from) ?? []), to]);
  }
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const node = queue[i]!;
    for (const child of [...new Set(next.get(node) ?? [])].sort()) {
      if (child === start) {
        const path = [start];
        for (let at: string | undefined = node; at !== undefined && at !== start; at = cameFrom.get(at)) path.splice(1, 0, at);
        return [...path, start];
      }
      if (!cameFrom.has(child)) {
        cameFrom.set(child, node);
        queue.push(child);
      }
    }
  }
  return [start, start];
}

/** `from → to  (from:line)` lines, sorted and without repeats, for a failure message. */
export function describeEdges(edges: ImportEdge[]): string {
  const lines = new Set(edges.map((e) => `  ${e.from} → ${e.to}  (${e.from}:${e.line})`));
  return [...lines].sort().join('\n');
}
