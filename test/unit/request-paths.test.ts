/**
 * docs/architecture.md "The path of each request, in the files a reader opens" lists, for six requests, every file a
 * reader opens. This test keeps the lists true to the code: every listed file exists and is not learn-once; every file
 * after the first is value-imported (directly or through a barrel) by a file listed before it or by a learn-once file,
 * or is reached the way its line says (the service behind an RPC, a `deps.…` port, an activity its workflow proxies);
 * each heading's count is its list's length, and the summary table says the same. Imports are read with the
 * TypeScript parser, so type-only imports never count.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
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
}

/** The requests: a `**<name>: <count>.**` heading, then the numbered list items up to the next heading. */
function requests(): Request[] {
  const found: Request[] = [];
  for (const line of section.split('\n')) {
    const heading = /^\*\*(.+): (\d+)\.\*\*/.exec(line);
    if (heading) {
      found.push({ name: heading[1]!, count: Number(heading[2]), entries: [] });
      continue;
    }
    const item = /^\d+\. `([^`]+)`(?: \(([^)]+)\))?:/.exec(line);
    if (item && found.length > 0) found.at(-1)!.entries.push({ file: item[1]!, reached: item[2] });
  }
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

describe('docs/architecture.md: the path of each request', () => {
  it('lists the six requests, and the learn-once files it names exist', () => {
    expect(listed.map((request) => request.name)).toHaveLength(6);
    expect(learned.length).toBeGreaterThan(20);
    for (const entry of learned) expect([entry, `${entry}.ts`].some((candidate) => existsSync(path.join(root, candidate)))).toBe(true);
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

  it.each(listed.map((request) => [request.name, request] as const))('%s: each file exists, is not learn-once, and is reached', (_name, request) => {
    const importers = [...learned.filter((entry) => entry.endsWith('.ts') && existsSync(path.join(root, entry)))];
    request.entries.forEach((entry, index) => {
      expect([entry.file, existsSync(path.join(root, entry.file))]).toEqual([entry.file, true]);
      expect([entry.file, isLearnOnce(entry.file, learned)]).toEqual([entry.file, false]);
      if (index > 0) {
        const importedBy = importers.filter((importer) => valueImports(importer).has(entry.file));
        const reachedAsSaid = entry.reached !== undefined && REACHED[entry.reached]?.test(entry.file) === true && workflowListed(entry, importers);
        expect([entry.file, importedBy.length > 0 || reachedAsSaid]).toEqual([entry.file, true]);
      }
      importers.push(entry.file);
    });
  });
});
