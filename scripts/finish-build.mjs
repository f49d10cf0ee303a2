// The second half of `npm run build` (after tsc wrote dist/): copies the files compiled code reads at run time and
// prebuilds the workflow bundle, so a worker started from dist/ loads it instead of bundling at every start.
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const require = createRequire(import.meta.url);

cpSync(path.join(root, 'src/crypto/pkcs1-v1_5-worker.js'), path.join(dist, 'src/crypto/pkcs1-v1_5-worker.js'));
mkdirSync(path.join(dist, 'docs'), { recursive: true });
cpSync(path.join(root, 'docs/openapi.yaml'), path.join(dist, 'docs/openapi.yaml'));

const started = Date.now();
const { bundleWorkflows, PREBUILT_BUNDLE_FILE } = require(path.join(dist, 'src/worker.js'));
const bundle = await bundleWorkflows();
writeFileSync(path.join(dist, PREBUILT_BUNDLE_FILE), bundle.code);
process.stderr.write(`workflow bundle: dist/${PREBUILT_BUNDLE_FILE} (${Math.round(bundle.code.length / 1024)} KiB, ${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
