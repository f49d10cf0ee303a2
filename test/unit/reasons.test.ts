/**
 * The reason registry (src/reasons.ts): tables agree on kinds, and every table the code declares is registered, so a
 * stored refusal (src/idempotency) is raised again with its table's kind. Which reason a throw site names needs no
 * test: a DomainError is built only from a table (`reasonError`), so an unknown reason or a restated kind does not
 * compile.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { COMMON_REASONS, DomainError, reasonError, type ReasonKinds } from '../../src/errors';
import { mergeReasonTables, REASON_TABLES, REASONS, kindOfReason } from '../../src/reasons';

const root = path.resolve(__dirname, '../..');

function sources(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return entry.name === 'gen' ? [] : sources(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Every `export const …_REASONS` table of src/, by module and name. */
function declaredTables(): Array<{ where: string; table: ReasonKinds }> {
  return sources(path.join(root, 'src')).flatMap((file) => {
    const names = [...readFileSync(file, 'utf8').matchAll(/^export const ([A-Z_]+_REASONS)\b/gm)].map((match) => match[1]!);
    if (names.length === 0) return [];
    const module = require(file) as Record<string, ReasonKinds>;
    return names.map((name) => ({ where: `${path.relative(root, file)} ${name}`, table: module[name]! }));
  });
}

describe('reason registry', () => {
  it('merges every table without a conflicting kind', () => {
    expect(() => mergeReasonTables(REASON_TABLES)).not.toThrow();
    expect(Object.keys(REASONS).length).toBeGreaterThan(60);
  });

  it('refuses two tables that give one reason different kinds', () => {
    expect(() => mergeReasonTables({ a: { SAME: 'not_found' }, b: { SAME: 'invalid_argument' } })).toThrow('reason SAME is not_found in a but invalid_argument in b');
  });

  it('registers every reason of every table the code declares, with its kind', () => {
    const tables = declaredTables();
    expect(tables.length).toBeGreaterThanOrEqual(Object.keys(REASON_TABLES).length);
    const problems = tables.flatMap(({ where, table }) =>
      Object.entries(table)
        .filter(([reason, kind]) => kindOfReason(reason) !== kind)
        .map(([reason, kind]) => `${where}: ${reason} (${kind}) → registry: ${kindOfReason(reason) ?? 'missing'}`),
    );
    expect(problems).toEqual([]);
  });

  it('builds a DomainError only from a table, its kind read there', () => {
    const error = reasonError(COMMON_REASONS, 'RATE_LIMITED', 'too many requests', { request: ['x'] });
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({ name: 'DomainError', kind: 'resource_exhausted', reason: 'RATE_LIMITED', message: 'too many requests', fields: { request: ['x'] } });
    expect(reasonError(COMMON_REASONS, 'DEADLINE_EXCEEDED').message).toBe('deadline exceeded');
  });

  it('refuses any other construction: at compile time, and past the types at run time', () => {
    // @ts-expect-error a reason outside its table does not compile
    expect(() => reasonError(COMMON_REASONS, 'NOT_A_REASON')).toThrow('assertion failed');
    // @ts-expect-error the constructor is protected: a DomainError comes from reasonError, its kind from the table
    expect(() => new DomainError('not_found', 'USER_NOT_FOUND', 'user not found')).toThrow('assertion failed');
  });
});
