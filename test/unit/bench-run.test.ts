/** The bench runner reads each bench's result from its stdout (bench/run.ts). */
import { resultOf } from '../../bench/run';

describe('resultOf', () => {
  const result = { name: 'transfers', ratios: [{ label: 'r', value: 1, goal: 0.8 }] };
  const printed = `${JSON.stringify(result, null, 2)}\n`;

  it('parses the JSON object a bench printed', () => {
    expect(resultOf(printed)).toEqual(result);
  });

  it('passes on the lines a library printed before it, and still parses the result', () => {
    const other: string[] = [];
    expect(resultOf(`\u001b[2m2026-11-26T21:02:50Z\u001b[22m [INFO] Workflow bundle created\n${printed}`, (line) => other.push(line))).toEqual(result);
    expect(other).toEqual(['\u001b[2m2026-11-26T21:02:50Z\u001b[22m [INFO] Workflow bundle created']);
  });

  it('refuses output without a result', () => {
    expect(() => resultOf('nothing here\n')).toThrow(SyntaxError);
  });
});
