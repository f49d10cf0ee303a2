/**
 * Only src/ledger reads the ledger's tables (docs/architecture.md "Rules"): every other module reads what the ledger
 * recorded through the ledger's reads (LedgerKeyReads in src/ledger/types.ts: by business key, by id), so the tables'
 * shape is the ledger's to change. The ledger's tables are those its migrations create (`ledger_…`, read from
 * src/db/migrations); no source file of the platform outside src/ledger and the migrations may name one, in code or
 * in a comment (a comment naming one is where a reader would go next).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');
/** The platform's sources: what runs, and the scripts beside it. */
const SOURCE_DIRS = ['src', 'rest-facade', 'workflows', 'scripts', 'bin'];
/** Where the ledger's tables may be named: the ledger itself and the schema's history. */
const ALLOWED = ['src/ledger/', 'src/db/migrations/'];

function filesUnder(dir: string): string[] {
  const full = path.join(root, dir);
  let names: string[];
  try {
    names = readdirSync(full);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const relative = path.posix.join(dir, name);
    if (name === 'node_modules' || name === 'gen') return [];
    return statSync(path.join(root, relative)).isDirectory() ? filesUnder(relative) : /\.(ts|js|mjs|cjs|sql)$/.test(name) ? [relative] : [];
  });
}

/** Every table the migrations create whose name is the ledger's (`ledger_…`). */
function ledgerTables(): string[] {
  const tables = new Set<string>();
  for (const file of filesUnder('src/db/migrations')) {
    const text = readFileSync(path.join(root, file), 'utf8');
    for (const [, name] of text.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?"?(ledger_[a-z_]+)/gi)) tables.add(name!.toLowerCase());
    for (const [, name] of text.matchAll(/createTable\(\s*['"](ledger_[a-z_]+)['"]/g)) tables.add(name!);
  }
  return [...tables].sort();
}

describe('only src/ledger reads the ledger’s tables', () => {
  const tables = ledgerTables();

  it('finds the ledger’s tables in its migrations', () => {
    expect(tables).toEqual(expect.arrayContaining(['ledger_accounts', 'ledger_idempotency_keys', 'ledger_pending_transfers', 'ledger_postings', 'ledger_transactions']));
  });

  it('no file outside src/ledger and the migrations names one', () => {
    const pattern = new RegExp(`\\b(${tables.join('|')})\\b`, 'g');
    const offenders: string[] = [];
    for (const file of SOURCE_DIRS.flatMap(filesUnder)) {
      if (ALLOWED.some((allowed) => file.startsWith(allowed))) continue;
      const lines = readFileSync(path.join(root, file), 'utf8').split('\n');
      lines.forEach((line, index) => {
        for (const [name] of line.matchAll(pattern)) offenders.push(`${file}:${index + 1} ${name}`);
      });
    }
    expect(offenders).toEqual([]);
  });
});
