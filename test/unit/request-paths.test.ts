/**
 * docs/architecture.md "The path of each request, in the files a reader opens" lists, for each request, every file a
 * reader opens. This test derives each path from the code and the ports its lines name, and fails when the list and
 * the code differ either way:
 *
 * - reached: every file after the first (the route) is value-imported (directly or through a barrel) by a file listed
 *   before it, or reached the way its line says (the service behind an RPC, a `deps.…` port, a flow's handler the
 *   upstream's door dispatches to, an activity its listed workflow proxies);
 * - complete: every domain file (a flow's, a capability's, onboarding's, the ledger's, a workflow, the façade's) that a
 *   listed file value-imports is listed, learn-once, a reason table (a refusal's answer), or named in the request's
 *   "Not counted" or "With …" paragraph (a branch the request does not take). The ledger's files are not followed
 *   (its internals behind the operation a line names). So a file left out of a list fails it;
 * - each heading's count is its list's length, the summary table says the same, the refund's path is listed and at
 *   most 14 files as the payout's, and the learn-once list (folders counted by their files) holds at most 20 files.
 *
 * Imports are read with the TypeScript parser, so type-only imports never count. Infrastructure (src/db, temporal,
 * crypto, money, web, abuse, rpc, gen and the top-level infrastructure files) knows no domain (the lint) and is not
 * counted unless a line names it as a port.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(__dirname, '../..');
const doc = readFileSync(path.join(root, 'docs/architecture.md'), 'utf8');
const section = doc.slice(doc.indexOf('## The path of each request'), doc.indexOf('## One error model'));

/** How a file not imported by an earlier one is reached, by the word in parentheses after it, and where it may be. */
const REACHED: Record<string, RegExp> = {
  RPC: /^(src\/flows\/[^/]+\/service|src\/upstream\/notifications)\.ts$/,
  dispatched: /^src\/flows\/[^/]+\/notifications\.ts$/,
  activity: /^(src\/flows\/[^/]+|src\/webhooks)\/activities\.ts$/,
  'deps.ledger': /^src\/ledger\/[^/]+\.ts$/,
  'deps.merchantAuth': /^src\/merchant-auth\/index\.ts$/,
  'deps.acquirer': /^src\/acquirers\/index\.ts$/,
  'deps.outbound': /^src\/web\/outbound\.ts$/,
  'deps.upstream': /^src\/upstream\/client\.ts$/,
};

interface Entry {
  file: string;
  reached?: string;
}

interface Request {
  name: string;
  count: number;
  entries: Entry[];
  /** The files its "Not counted …" and "With …" paragraphs name: branches the request does not take. */
  excused: string[];
}

/** A domain file: what the paths count (the façade's, a flow's, a capability's, onboarding's, the ledger's, a workflow). */
const DOMAIN = /^(rest-facade|workflows|src\/(flows|health|merchant-auth|preorders|webhooks|acquirers|instruments|idempotency|events|upstream|onboarding|ledger|admin|dashboard|timeline))\//;
/** A reason table: the answers of refusals, a branch no successful request takes. */
const REASON_TABLE = /(^|\/)(service-)?reasons\.ts$/;

/** The backticked paths of a text (a path has a slash). */
function pathsIn(text: string): string[] {
  return [...text.matchAll(/`([^`\s]+\/[^`\s]+)`/g)].map((match) => match[1]!);
}

/**
 * The requests: a `**<name>: <count>.**` heading, then the numbered list items up to the next heading, and the
 * paragraphs (up to the next heading) that start with "Not counted" or "With ".
 */
function requests(): Request[] {
  const found: Request[] = [];
  let paragraph: string[] = [];
  const endParagraph = () => {
    const text = paragraph.join(' ');
    if (found.length > 0 && /^(Not counted|With )/.test(text)) found.at(-1)!.excused.push(...pathsIn(text));
    paragraph = [];
  };
  for (const line of section.split('\n')) {
    if (line.trim() === '') {
      endParagraph();
      continue;
    }
    paragraph.push(line.trim());
    const heading = /^\*\*(.+): (\d+)\.\*\*/.exec(line);
    if (heading) {
      paragraph = [];
      found.push({ name: heading[1]!, count: Number(heading[2]), entries: [], excused: [] });
      continue;
    }
    const item = /^\d+\. `([^`]+)`(?: \(([^)]+)\))?:/.exec(line);
    if (item && found.length > 0) found.at(-1)!.entries.push({ file: item[1]!, reached: item[2] });
  }
  endParagraph();
  return found;
}

/** The learn-once files and folders: every backticked path of the "Learn once" paragraph (a bare name is a sibling). */
function learnOnce(): string[] {
  const start = section.indexOf('**Learn once**');
  const paragraph = section.slice(start, section.indexOf('\n\n', start));
  const paths: string[] = [];
  let folder = '';
  for (const [, name] of paragraph.matchAll(/`([^`]+)`/g)) {
    if (name!.includes('/')) {
      paths.push(name!.replace(/\/$/, ''));
      folder = path.posix.dirname(name!.replace(/\/$/, ''));
    } else if (/\.ts$/.test(name!)) {
      paths.push(path.posix.join(folder, name!));
    }
  }
  return paths;
}

function isLearnOnce(file: string, learned: string[]): boolean {
  return learned.some((entry) => file === entry || file === `${entry}.ts` || file.startsWith(`${entry}/`));
}

/** The files a learn-once entry stands for: the file, or every .ts file under the folder. */
function filesOf(entry: string): string[] {
  const full = path.join(root, entry);
  if (existsSync(`${full}.ts`)) return [`${entry}.ts`];
  if (!existsSync(full)) return [];
  if (statSync(full).isFile()) return [entry];
  return readdirSync(full).flatMap((name) => filesOf(path.posix.join(entry, name))).filter((file) => file.endsWith('.ts'));
}

/** The local module a specifier names from `from`, as a path from the repository root, or undefined. */
function resolve(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
  for (const candidate of [`${base}.ts`, `${base}/index.ts`, base]) {
    const full = path.join(root, candidate);
    if (existsSync(full) && statSync(full).isFile()) return candidate;
  }
  return undefined;
}

/** The value names a declaration imports or re-exports (`*` for all of a module's), none when it is type-only. */
function valueNames(node: ts.ImportDeclaration | ts.ExportDeclaration): string[] {
  if (ts.isImportDeclaration(node)) {
    const clause = node.importClause;
    if (!clause) return ['*']; // a side-effect import runs the whole module
    if (clause.isTypeOnly) return [];
    const names = clause.name ? ['default'] : [];
    const bindings = clause.namedBindings;
    if (bindings && ts.isNamespaceImport(bindings)) return ['*'];
    if (bindings) names.push(...bindings.elements.filter((element) => !element.isTypeOnly).map((element) => (element.propertyName ?? element.name).text));
    return names;
  }
  if (node.isTypeOnly) return [];
  const clause = node.exportClause;
  if (!clause || !ts.isNamedExports(clause)) return ['*'];
  return clause.elements.filter((element) => !element.isTypeOnly).map((element) => (element.propertyName ?? element.name).text);
}

interface Parsed {
  /** Each module this file imports or re-exports values of, with the names (`*`: all). */
  imports: Array<{ module: string; names: string[] }>;
  /** Names this file declares and exports itself. */
  declared: Set<string>;
  /** A barrel: a file of re-exports only, which the editor jumps through. */
  barrel: boolean;
  /** `export * from` targets and `export { a as b } from` renames, to find where a re-exported name is declared. */
  reexports: Array<{ module: string; names?: Map<string, string> }>;
}

const parsed = new Map<string, Parsed>();

function parse(file: string): Parsed {
  let result = parsed.get(file);
  if (result) return result;
  const source = ts.createSourceFile(file, readFileSync(path.join(root, file), 'utf8'), ts.ScriptTarget.ES2022, false);
  result = { imports: [], declared: new Set(), barrel: source.statements.length > 0, reexports: [] };
  for (const statement of source.statements) {
    if (!ts.isExportDeclaration(statement) || !statement.moduleSpecifier) result.barrel = false;
    const exported = ts.canHaveModifiers(statement) && ts.getModifiers(statement)?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword);
    if (exported && (ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) && statement.name) result.declared.add(statement.name.text);
    if (exported && ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) if (ts.isIdentifier(declaration.name)) result.declared.add(declaration.name.text);
    }
    if (!(ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement))) continue;
    if (!statement.moduleSpecifier || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    const module = resolve(file, statement.moduleSpecifier.text);
    if (!module) continue;
    const names = valueNames(statement);
    if (names.length > 0) result.imports.push({ module, names });
    if (ts.isExportDeclaration(statement) && !statement.isTypeOnly) {
      const clause = statement.exportClause;
      const renames = clause && ts.isNamedExports(clause) ? new Map(clause.elements.map((element) => [element.name.text, (element.propertyName ?? element.name).text])) : undefined;
      result.reexports.push({ module, names: renames });
    }
  }
  parsed.set(file, result);
  return result;
}

/** The module that declares the value `name` exported by `module` (through its re-exports), or `module` itself. */
function declaringModule(module: string, name: string, seen = new Set<string>()): string | undefined {
  if (seen.has(module)) return undefined;
  seen.add(module);
  const file = parse(module);
  if (file.declared.has(name)) return module;
  for (const reexport of file.reexports) {
    if (reexport.names && !reexport.names.has(name)) continue;
    const found = declaringModule(reexport.module, reexport.names?.get(name) ?? name, seen);
    if (found) return found;
  }
  return undefined;
}

/**
 * The modules whose values `file` imports. Through a barrel, the module that declares each name imported from it
 * (a barrel is jumped through, not read).
 */
function valueImports(file: string): Set<string> {
  const modules = new Set<string>();
  for (const { module, names } of parse(file).imports) {
    if (!parse(module).barrel) {
      modules.add(module);
      continue;
    }
    for (const name of names) {
      if (name === '*') parse(module).reexports.forEach((reexport) => modules.add(reexport.module));
      else modules.add(declaringModule(module, name) ?? module);
    }
  }
  return modules;
}

/** An activity is reached through its own workflow, which must be listed before it. */
function workflowListed(entry: Entry, before: string[]): boolean {
  if (entry.reached !== 'activity') return true;
  const owner = /^src\/(?:flows\/)?([^/]+)\//.exec(entry.file)![1];
  return before.includes(`workflows/${owner === 'webhooks' ? 'webhook-delivery' : owner}.ts`);
}

const listed = requests();
const learned = learnOnce();

/**
 * What is wrong with a request's list, as sentences: a listed file missing, learn-once or not reached; a domain file a
 * listed file imports that is neither listed, learn-once, a reason table nor excused.
 */
function problemsOf(request: Request): string[] {
  const problems: string[] = [];
  const files = request.entries.map((entry) => entry.file);
  request.entries.forEach((entry, index) => {
    if (!existsSync(path.join(root, entry.file))) return void problems.push(`${entry.file} does not exist`);
    if (isLearnOnce(entry.file, learned)) problems.push(`${entry.file} is learn-once`);
    if (index === 0) return;
    const before = files.slice(0, index);
    const importedBy = before.filter((importer) => existsSync(path.join(root, importer)) && valueImports(importer).has(entry.file));
    const reachedAsSaid = entry.reached !== undefined && REACHED[entry.reached]?.test(entry.file) === true && workflowListed(entry, before);
    if (importedBy.length === 0 && !reachedAsSaid) problems.push(`${entry.file} is reached by no file listed before it, nor as its line says (${entry.reached ?? 'no port named'})`);
  });
  for (const file of files) {
    // The ledger's internals behind the operation a line names are not followed.
    if (file.startsWith('src/ledger/') || !existsSync(path.join(root, file))) continue;
    for (const module of valueImports(file)) {
      if (!DOMAIN.test(module) || REASON_TABLE.test(module) || files.includes(module) || isLearnOnce(module, learned) || request.excused.includes(module)) continue;
      problems.push(`${file} imports ${module}, which is not listed (nor learn-once, nor named as a branch not taken)`);
    }
  }
  return problems;
}

describe('docs/architecture.md: the path of each request', () => {
  it('lists the requests, the refund’s and the payout’s among them in at most 14 files each', () => {
    expect(listed.length).toBeGreaterThanOrEqual(6);
    for (const name of ['Area B refund', 'Area B payout']) {
      const request = listed.find((candidate) => candidate.name === name);
      expect([name, request !== undefined]).toEqual([name, true]);
      expect([name, request!.count <= 14]).toEqual([name, true]);
    }
  });

  it('holds only primitives as learn-once: at most 20 files, each existing', () => {
    const files = learned.flatMap(filesOf);
    for (const entry of learned) expect([entry, filesOf(entry).length > 0]).toEqual([entry, true]);
    expect(new Set(files).size).toBeLessThanOrEqual(20);
  });

  it.each(listed.map((request) => [request.name, request] as const))('%s: its count is its list, and the table says so', (_name, request) => {
    expect(request.entries).toHaveLength(request.count);
    const files = request.entries.map((entry) => entry.file);
    expect(new Set(files).size).toBe(files.length);
    const row = section.split('\n').find((line) => line.startsWith(`| ${request.name.replace(/, the call then the card form$/, '')}`));
    expect(row).toBeDefined();
    const [, , , now, target, over] = row!.split('|').map((cell) => cell.trim());
    expect(Number(now)).toBe(request.count);
    expect(Number(over)).toBe(Math.max(0, request.count - Number(target!.replace('≤', '').trim())));
  });

  it.each(listed.map((request) => [request.name, request] as const))('%s: its list is the path the code takes, no file more or less', (_name, request) => {
    expect(problemsOf(request)).toEqual([]);
  });

  it('fails a list with a file left out or one the path does not reach', () => {
    const refund = listed.find((request) => request.name === 'Area B refund')!;
    // The refund's store, left out: the service imports it, so it is missing.
    const without = { ...refund, entries: refund.entries.filter((entry) => entry.file !== 'src/flows/refund/store.ts') };
    const missing = problemsOf(without);
    expect(missing.length).toBeGreaterThan(0);
    expect(missing.filter((problem) => !problem.includes('imports src/flows/refund/store.ts, which is not listed'))).toEqual([]);
    // A file no listed file imports, added: it is not reached.
    const extra = { ...refund, entries: [...refund.entries, { file: 'src/flows/wallet/store.ts' }] };
    expect(problemsOf(extra)).toEqual([expect.stringContaining('src/flows/wallet/store.ts is reached by no file')]);
  });
});
