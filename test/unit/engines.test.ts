/**
 * The supported Node versions (package.json `engines`, stated in the README) and the locked dependencies agree: every
 * package in package-lock.json accepts the lowest release of each supported major, so `npm install` prints no
 * EBADENGINE warning on any supported Node (.ci/run runs the whole suite on Node 24, the Docker image's, and a smoke
 * on the lowest major, checking both installs' output; test/unit/deployment-image.test.ts holds the Node 24 release).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import semver from 'semver';

const ROOT = path.join(__dirname, '..', '..');
const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
};
const supported = manifest.engines.node;

/** The lowest version of each alternative of the range (`^20.19.0 || ^22.13.0 || >=24` → 20.19.0, 22.13.0, 24.0.0). */
const lowestOfEachMajor = new semver.Range(supported).set.map((comparators) => semver.minVersion(comparators.map(String).join(' '))!.version);

describe('supported Node versions', () => {
  it('are stated in the README as in package.json', () => {
    expect(lowestOfEachMajor.length).toBeGreaterThan(1);
    expect(readFileSync(path.join(ROOT, 'README.md'), 'utf8')).toContain(`\`${supported}\``);
  });

  it.each(lowestOfEachMajor)('are accepted by every locked package on Node %s', (version) => {
    const refusing = Object.entries(lock.packages)
      .map(([where, entry]) => ({ where, version: entry.version, range: Array.isArray(entry.engines) ? undefined : entry.engines?.node }))
      .filter(({ range }) => range !== undefined && !semver.satisfies(version, range))
      .map(({ where, version: locked, range }) => `${where.replace(/^.*node_modules\//, '')}@${locked} wants node ${range}`);
    expect(refusing).toEqual([]);
  });
});
