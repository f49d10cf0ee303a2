/**
 * The catalog of event types (src/events/catalog.ts) and docs/events.md "Event types" name the same types: a type
 * the code writes is documented with its data, and the document names no type the code never writes.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { EVENT_TYPES, isEventType } from '../../src/events/catalog';

const DOCUMENT = readFileSync(path.join(__dirname, '..', '..', 'docs', 'events.md'), 'utf8');

/** Every `a.b` type named in the first column of a table of the "Event types" section. */
function documentedTypes(): string[] {
  const section = DOCUMENT.slice(DOCUMENT.indexOf('## Event types'), DOCUMENT.indexOf('## Ordering of webhooks'));
  const firstCells = section.split('\n').filter((line) => line.startsWith('| `')).map((line) => line.split('|')[1]!);
  return firstCells.flatMap((cell) => [...cell.matchAll(/`([a-z_]+\.[a-z_]+)`/g)].map((match) => match[1]!));
}

describe('event types', () => {
  it('documents every type of the catalog, and only those', () => {
    expect([...documentedTypes()].sort()).toEqual([...EVENT_TYPES].sort());
  });

  it('recognises only the catalog’s types', () => {
    for (const type of EVENT_TYPES) expect(isEventType(type)).toBe(true);
    for (const text of ['', 'payin', 'payin.', 'payin.settled', 'PAYIN.SUCCESS', 'payin.success ', 'constructor', '__proto__']) expect(isEventType(text)).toBe(false);
  });
});
