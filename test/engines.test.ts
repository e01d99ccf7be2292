import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/** semver (a pinned devDependency) has no bundled types: the one function used, typed here. */
const { satisfies } = createRequire(import.meta.url)('semver') as { satisfies(version: string, range: string): boolean };

const ROOT = resolve(import.meta.dirname, '..');
const MODULES = join(ROOT, 'node_modules');

/** Every installed package, scoped and nested ones (`a/node_modules/b`) included: path, version and engines.node. */
function installedPackages(modules = MODULES): Array<{ name: string; version: string; node: string | undefined }> {
  const names: string[] = [];
  for (const entry of readdirSync(modules)) {
    if (entry.startsWith('.')) continue;
    if (entry.startsWith('@')) for (const scoped of readdirSync(join(modules, entry))) names.push(`${entry}/${scoped}`);
    else names.push(entry);
  }
  return names.flatMap((name) => {
    const folder = join(modules, name);
    let text: string;
    try {
      text = readFileSync(join(folder, 'package.json'), 'utf8');
    } catch {
      return []; // a folder without a package.json (npm's own leftovers) is no package
    }
    const manifest = JSON.parse(text) as { version?: string; engines?: { node?: string } };
    const nested = existsSync(join(folder, 'node_modules')) ? installedPackages(join(folder, 'node_modules')) : [];
    return [{ name: relative(MODULES, folder), version: manifest.version ?? '?', node: manifest.engines?.node }, ...nested];
  });
}

describe('the Node version (README: Node 20.19+)', () => {
  it('our own engines.node admits the running Node', () => {
    const ours = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(ours.engines.node).toBe('>=20.19');
    expect(satisfies(process.version, ours.engines.node)).toBe(true);
  });

  it('the range check tells a range that excludes this Node (so the walk below can fail)', () => {
    expect(satisfies('20.20.2', '>=22')).toBe(false);
    expect(satisfies('20.20.2', '^18.18.0 || ^20.9.0 || >=21.1.0')).toBe(true);
  });

  it("no installed package's engines.node excludes the running Node", () => {
    // Only what package-lock.json installs: in a working copy that shares node_modules with another, packages it
    // installed (and has not yet committed to its lock) are not ours to judge.
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
    const packages = installedPackages().filter((p) => `node_modules/${p.name}` in lock.packages);
    expect(packages.length).toBeGreaterThan(50);
    const misfits = packages
      .filter((p) => p.node !== undefined && !satisfies(process.version, p.node))
      .map((p) => `${p.name}@${p.version} wants node ${p.node}`);
    expect(misfits, `running ${process.version}`).toEqual([]);
  });

  it('cookie and content-disposition are the Node 18 majors the overrides pin (light-my-request, @fastify/static)', () => {
    const versions = (name: string) => installedPackages().filter((p) => p.name.split('node_modules/').pop() === name).map((p) => p.version);
    expect(versions('cookie')).toEqual(['1.1.1']);
    expect(versions('content-disposition')).toEqual(['2.0.1']);
  });
});
