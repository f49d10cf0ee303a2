// `npm run lint:docker`: the Dockerfile through two linters, no finding of either allowed (CI runs it with `npm run
// lint`): dockerfilelint (best practices: apt-get flags, sudo, ports, instruction arguments) and dockerfile-utils'
// validator (the syntax and flags of every instruction, as the VS Code Docker extension checks them, every rule an
// error). Then the base images: Node 24, pinned to a release (node:24.X.Y-…), the same in every stage.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const file = process.argv[2] ?? path.join(root, 'Dockerfile');
const content = readFileSync(file, 'utf8');
const findings = [];

const dockerfilelint = require('dockerfilelint');
for (const item of dockerfilelint.run(root, content)) findings.push(`line ${item.line}: dockerfilelint ${item.rule}: ${item.title}`);

const { validate } = require('dockerfile-utils');
const everyRule = Object.fromEntries(
  ['deprecatedMaintainer', 'directiveCasing', 'emptyContinuationLine', 'instructionCasing', 'instructionCmdMultiple', 'instructionEntrypointMultiple', 'instructionHealthcheckMultiple', 'instructionJSONInSingleQuotes', 'instructionWorkdirRelative'].map((rule) => [rule, 2]),
);
for (const diagnostic of validate(content, everyRule)) findings.push(`line ${diagnostic.range.start.line + 1}: dockerfile-utils: ${diagnostic.message}`);

const images = [...content.matchAll(/^FROM\s+(\S+)/gm)].map((match) => match[1]);
for (const image of images) {
  if (!/^node:24\.\d+\.\d+-[a-z0-9-]+$/.test(image)) findings.push(`FROM ${image}: the base image must be Node 24 pinned to a release (node:24.X.Y-<variant>)`);
}
if (new Set(images).size !== 1) findings.push(`the stages build on different images: ${images.join(', ')}`);

for (const finding of findings) process.stderr.write(`${path.relative(root, file)} ${finding}\n`);
if (findings.length > 0) process.exit(1);
process.stderr.write(`${path.relative(root, file)}: no finding (dockerfilelint, dockerfile-utils); base image ${images[0]}\n`);
