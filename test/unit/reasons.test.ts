/**
 * The reason registry (src/reasons.ts): tables agree on kinds, and every reason the code throws — as a DomainError,
 * a field refusal or a workflow/activity failure type — is registered with the kind it is thrown with.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { mergeReasonTables, REASON_TABLES, REASONS, kindOfReason } from '../../src/reasons';

const root = path.resolve(__dirname, '../..');

function sources(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return entry.name === 'gen' ? [] : sources(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

interface Thrown {
  reason: string;
  kind: string | undefined;
  file: string;
}

/** Every reason literal thrown in src/ and workflows/, with the kind it is thrown with when the code says. */
function thrownReasons(): Thrown[] {
  const found: Thrown[] = [];
  for (const file of [...sources(path.join(root, 'src')), ...sources(path.join(root, 'workflows'))]) {
    const text = readFileSync(file, 'utf8');
    const where = path.relative(root, file);
    for (const match of text.matchAll(/new DomainError\(\s*'([a-z_]+)',\s*['`]([A-Z_]+)['`]/g)) found.push({ kind: match[1], reason: match[2]!, file: where });
    for (const match of text.matchAll(/invalidFields\([^;]*?,\s*'([A-Z_]+)'\)/gs)) found.push({ kind: 'invalid_argument', reason: match[1]!, file: where });
    for (const match of text.matchAll(/nonRetryable\([^;]*?,\s*'([A-Z_]+)'/gs)) found.push({ kind: undefined, reason: match[1]!, file: where });
    for (const match of text.matchAll(/notFound\('([A-Z_]+)'/g)) found.push({ kind: 'not_found', reason: match[1]!, file: where });
    for (const match of text.matchAll(/reasonError\(\s*([A-Z_]+),\s*'([A-Z_]+)'/g)) found.push({ kind: undefined, reason: match[2]!, file: where });
  }
  return found;
}

describe('reason registry', () => {
  it('merges every table without a conflicting kind', () => {
    expect(() => mergeReasonTables(REASON_TABLES)).not.toThrow();
    expect(Object.keys(REASONS).length).toBeGreaterThan(60);
  });

  it('refuses two tables that give one reason different kinds', () => {
    expect(() => mergeReasonTables({ a: { SAME: 'not_found' }, b: { SAME: 'invalid_argument' } })).toThrow('reason SAME is not_found in a but invalid_argument in b');
  });

  it('registers every reason the code throws, with the kind it is thrown with', () => {
    const thrown = thrownReasons();
    expect(thrown.length).toBeGreaterThan(40);
    const problems = thrown
      .filter(({ reason, kind }) => kindOfReason(reason) === undefined || (kind !== undefined && kindOfReason(reason) !== kind))
      .map(({ reason, kind, file }) => `${file}: ${reason} (${kind ?? 'failure type'}) → registry: ${kindOfReason(reason) ?? 'missing'}`);
    expect(problems).toEqual([]);
  });
});
