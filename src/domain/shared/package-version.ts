import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The folder holding this package's package.json, found from src/ (tests) and from dist/src/ (the build) alike. */
function packageRoot(from = import.meta.dirname): string {
  return existsSync(join(from, 'package.json')) || dirname(from) === from ? from : packageRoot(dirname(from));
}

/** emk's version, read from package.json at start-up: written there only, so a release changes it once. */
export const EMK_VERSION: string = (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
