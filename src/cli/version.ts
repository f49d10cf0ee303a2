/**
 * `payments --version`: the platform's version (package.json's, found upward from this file, so it is the same from
 * the TypeScript sources and from the compiled dist/ of the image) with the Node.js that runs it.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

const PACKAGE_NAME = 'payments-platform';

/** The version of the nearest package.json named payments-platform above `from`, else `unknown`. */
export function platformVersion(from = __dirname): string {
  for (let directory = from; ; directory = path.dirname(directory)) {
    const file = path.join(directory, 'package.json');
    if (existsSync(file)) {
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (manifest.name === PACKAGE_NAME && manifest.version) return manifest.version;
    }
    if (path.dirname(directory) === directory) return 'unknown';
  }
}

/** The line `payments --version` prints: `payments 0.1.0 (Node.js v24.11.1, linux-x64)`. */
export function versionLine(): string {
  return `payments ${platformVersion()} (Node.js ${process.version}, ${process.platform}-${process.arch})`;
}
