// The second half of `npm run build` (after tsc wrote dist/): copies the files compiled code reads at run time and
// prebuilds the workflow bundle, so a worker started from dist/ loads it instead of bundling at every start.
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const require = createRequire(import.meta.url);

mkdirSync(path.join(dist, 'docs'), { recursive: true });
cpSync(path.join(root, 'docs/openapi.yaml'), path.join(dist, 'docs/openapi.yaml'));

const { bundleWorkflows, PREBUILT_BUNDLE_FILE, PREBUILT_TRACED_BUNDLE_FILE } = require(path.join(dist, 'src/worker.js'));
// The plain bundle, and the one with the OpenTelemetry workflow interceptors a worker uses when tracing is on.
for (const [file, traced] of [[PREBUILT_BUNDLE_FILE, false], [PREBUILT_TRACED_BUNDLE_FILE, true]]) {
  const started = Date.now();
  const bundle = await bundleWorkflows({ traced });
  writeFileSync(path.join(dist, file), bundle.code);
  process.stderr.write(`workflow bundle: dist/${file} (${Math.round(bundle.code.length / 1024)} KiB, ${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
}
