import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The folder holding this package's package.json, found from src/ (tests) and from dist/src/ (the build) alike. */
function findPackageRoot(from: string): string {
  return existsSync(join(from, 'package.json')) || dirname(from) === from ? from : findPackageRoot(dirname(from));
}

/** Where emk is installed: its fixtures, its built browser script and its package.json live under it. */
export const PACKAGE_ROOT = findPackageRoot(import.meta.dirname);

/** emk's version, read from package.json at start-up: written there only, so a release changes it once. */
export const EMK_VERSION: string = (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
