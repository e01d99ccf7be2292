import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import {
  describeEdges,
  findCycles,
  listFiles,
  readImportGraph,
  shortestCycle,
  REPO_ROOT,
  type ImportEdge,
} from './helpers/import-graph.js';

/**
 * The layering rules of the source tree (docs/architecture.md, "What `npm test` checks of the layout"). Reads
 * the files' import statements only: no build, no database. Every import counts, `import type` and
 * `export … from` included. Test files are not checked.
 */

const graph = readImportGraph(REPO_ROOT, ['src', 'migrations', 'bench']);
/** Imports of files of the tree (relative specifiers), as opposed to packages. */
const internal = graph.edges.filter((e) => e.relative);

const under = (path: string, folder: string) => path.startsWith(`${folder}/`);
const underAny = (path: string, folders: string[]) => folders.some((folder) => under(path, folder));

/** The area folders: each holds only a module.ts that builds its nouns (docs/architecture.md, the module map). */
const AREAS = new Set(
  graph.files.flatMap((file) => /^src\/domain\/([^/]+)\/module\.ts$/.exec(file)?.[1] ?? []),
);
/** The folders of src/domain/ that are not nouns. */
const NOT_NOUNS = new Set(['db', 'shared', ...AREAS]);
/** `contacts` for `src/domain/contacts/contact-service.ts`; undefined outside a noun's folder. */
function nounOf(path: string): string | undefined {
  const folder = /^src\/domain\/([^/]+)\//.exec(path)?.[1];
  return folder !== undefined && !NOT_NOUNS.has(folder) ? folder : undefined;
}

/** Throws a message naming every offending import, so a reader knows what to fix. */
function expectNone(edges: ImportEdge[], rule: string, fix: string): void {
  if (edges.length === 0) return;
  const pairs = new Set(edges.map((e) => `${e.from} → ${e.to}`)).size;
  throw new Error(
    `${rule}: ${edges.length} offending import(s), ${pairs} distinct from → to:\n${describeEdges(edges)}\n${fix}`,
  );
}

describe('the import graph is read whole', () => {
  it('every kind of import statement is seen', () => {
    const text = [
      "import { a } from './a.js';",
      "import type { B } from './b.js';",
      "import './c.js';",
      "export { d } from './d.js';",
      "export type { E } from './e.js';",
      "export * from './f.js';",
      "const g = await import('./g.js');",
      "import h = require('./h.js');",
    ].join('\n');
    const seen = ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
    expect(seen.sort()).toEqual(['./a.js', './b.js', './c.js', './d.js', './e.js', './f.js', './g.js', './h.js']);
  });

  it('every relative import names a file of the tree', () => {
    expect(graph.files.filter((f) => under(f, 'src')).length).toBeGreaterThan(100);
    expectNone(
      internal.filter((e) => !e.resolved),
      'relative imports of no file',
      'A specifier is written as the emitted file is named (`./x.js` for `./x.ts`); test/helpers/import-graph.ts resolves it.',
    );
  });
});

describe('layout', () => {
  it('rule 1: no import cycles among the files under src/ (type-only imports included)', () => {
    const files = graph.files.filter((f) => under(f, 'src'));
    const cycles = findCycles(files, internal);
    if (cycles.length === 0) return;
    const report = cycles.map((cycle, i) => {
      const members = new Set(cycle);
      const inside = internal.filter((e) => members.has(e.from) && members.has(e.to));
      return [
        `cycle ${i + 1} (${cycle.length} files):`,
        ...cycle.map((f) => `    ${f}`),
        `  e.g. ${shortestCycle(cycle, inside).join(' → ')}`,
        '  its imports (from → to):',
        describeEdges(inside).replace(/^ {2}/gm, '    '),
      ].join('\n');
    });
    throw new Error(
      `${cycles.length} import cycle(s) under src/:\n${report.join('\n')}\n` +
        'Break each cycle: move what both sides need into a file that imports neither (a type into its own file, ' +
        'a shared helper down a layer), or pass it in as a dependency.',
    );
  });

  /**
   * Imports of a store from outside its folder that are tolerated, as `from → to` (both repository paths).
   * Empty, and meant to stay so: a store is its noun's private business.
   */
  const allowedStoreImports: string[] = [
    // e.g. 'src/domain/x/x-service.ts → src/domain/y/y-store.ts',
  ];

  it("rule 2: a noun's store (src/domain/<noun>/**/*-store.ts) is imported only from its own folder", () => {
    const storeNoun = (path: string) => /^src\/domain\/([^/]+)\/(?:.*\/)?[^/]+-store\.ts$/.exec(path)?.[1];
    const offending = internal.filter((e) => {
      const noun = storeNoun(e.to);
      return (
        noun !== undefined &&
        !under(e.from, `src/domain/${noun}`) &&
        !allowedStoreImports.includes(`${e.from} → ${e.to}`)
      );
    });
    expectNone(
      offending,
      "stores imported from outside their noun's folder (src/, migrations/, bench/; create-services.ts included)",
      "Use the noun's service (or have the noun's own folder build its store) instead of reaching into its store.",
    );
  });

  describe('rule 3: floors', () => {
    it('nothing under src/domain/ imports src/server, src/cli, src/worker or src/sdk', () => {
      expectNone(
        internal.filter(
          (e) => under(e.from, 'src/domain') && underAny(e.to, ['src/server', 'src/cli', 'src/worker', 'src/sdk']),
        ),
        'the domain imports a host',
        'Arrows point down only: the hosts import the domain, never the reverse.',
      );
    });

    it('nothing under src/domain/ imports Fastify or commander (or @clack/prompts)', () => {
      const hostPackage = /^(?:fastify(?:-[^/]+)?|@fastify\/[^/]+|commander|@clack\/[^/]+)(?:\/.*)?$/;
      expectNone(
        graph.edges.filter((e) => under(e.from, 'src/domain') && !e.relative && hostPackage.test(e.to)),
        'the domain imports a host framework',
        'HTTP and the command line belong to src/server and src/cli.',
      );
    });

    it('src/domain/shared/** imports only src/domain/shared/** and src/domain/errors.ts', () => {
      expectNone(
        internal.filter(
          (e) => under(e.from, 'src/domain/shared') && !under(e.to, 'src/domain/shared') && e.to !== 'src/domain/errors.ts',
        ),
        'shared/ imports something above it',
        'shared/ is the bottom layer: move what it needs into shared/, or the code that needs it out of shared/.',
      );
    });

    it('src/domain/db/** imports only db/, shared/, errors.ts (and migrations/): no noun', () => {
      expectNone(
        internal.filter(
          (e) =>
            under(e.from, 'src/domain/db') &&
            !underAny(e.to, ['src/domain/db', 'src/domain/shared', 'migrations']) &&
            e.to !== 'src/domain/errors.ts',
        ),
        'db/ imports a noun (or another file above it)',
        'db/ knows connections, dialects and writes, not nouns: pass what it needs in from the noun.',
      );
    });

    it('migrations/** import nothing from src/', () => {
      expectNone(
        internal.filter((e) => under(e.from, 'migrations') && under(e.to, 'src')),
        'a migration imports live code',
        'A migration is frozen: copy the value it needs into it (docs/architecture.md, "How to add a noun", step 7).',
      );
    });

    it('a noun file (src/domain/<noun>/…, noun ≠ db, shared) never imports a module.ts or create-services.ts', () => {
      const isRoot = (path: string) =>
        path === 'src/domain/create-services.ts' || (under(path, 'src/domain') && /(?:^|\/)module\.ts$/.test(path));
      expectNone(
        internal.filter((e) => nounOf(e.from) !== undefined && isRoot(e.to)),
        'a noun imports the composition',
        'Nouns are wired by create-services.ts and the module.ts files, and do not import them: take what is needed as a dependency.',
      );
    });

    it('an area folder holds only its module.ts, and a module imports no other area but the runtime', () => {
      const areaOf = (path: string) => /^src\/domain\/([^/]+)\//.exec(path)?.[1];
      const strays = graph.files.filter((file) => AREAS.has(areaOf(file) ?? '') && !file.endsWith('/module.ts'));
      expect(strays, 'nouns live in their own folders, not in an area folder').toEqual([]);
      expectNone(
        internal.filter(
          (e) => AREAS.has(areaOf(e.from) ?? '') && AREAS.has(areaOf(e.to) ?? '') && areaOf(e.to) !== areaOf(e.from) && e.to !== 'src/domain/runtime/module.ts',
        ),
        'an area module imports another area',
        'Modules are listed in order by create-services.ts, which hands each what the areas before it made.',
      );
      expect(AREAS.size, 'the area modules were found').toBeGreaterThanOrEqual(8);
    });

    it('src/server never imports src/cli', () => {
      // The other way is not checked: src/cli/commands/serve.ts imports src/server/main.ts (`emk serve`).
      expectNone(
        internal.filter((e) => under(e.from, 'src/server') && under(e.to, 'src/cli')),
        'the server imports the command line',
        'What both need belongs in src/domain.',
      );
    });
  });

  it('rule 4: the composition root, src/domain/create-services.ts, has fewer than 150 lines', () => {
    const text = readFileSync(join(REPO_ROOT, 'src/domain/create-services.ts'), 'utf8');
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (lines >= 150) {
      throw new Error(
        `src/domain/create-services.ts has ${lines} lines (fewer than 150 wanted): ` +
          "move each noun's construction into its own folder and leave the root only the wiring.",
      );
    }
  });

  it("rule 5: no file under src/ holds package.json's version literally", () => {
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    // The version on its own, not inside a longer one (0.1.0 is not found in 10.1.0 or 0.1.01).
    const literal = new RegExp(`(?<![\\w.])${version.replace(/[.+]/g, '\\$&')}(?![\\w]|\\.\\d)`);
    const found: string[] = [];
    for (const file of listFiles(REPO_ROOT, ['src'])) {
      readFileSync(join(REPO_ROOT, file), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (literal.test(line)) found.push(`  ${file}:${i + 1}: ${line.trim()}`);
        });
    }
    if (found.length > 0) {
      throw new Error(
        `the version ${version} is written in ${found.length} place(s) under src/:\n${found.join('\n')}\n` +
          'Read it from package.json in one place and import it from there.',
      );
    }
  });

  it('no file holds a merge-conflict marker (a merge left half-resolved)', () => {
    const marker = /^(<{7} |={7}$|>{7} )/;
    const found: string[] = [];
    for (const file of listFiles(REPO_ROOT, ['src', 'test', 'docs', 'migrations', 'bench', 'fixtures'], (path) => /\.(ts|md|json|html|mjs)$/.test(path))) {
      readFileSync(join(REPO_ROOT, file), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (marker.test(line)) found.push(`  ${file}:${i + 1}`);
        });
    }
    expect(found, 'conflict markers').toEqual([]);
  });
});
