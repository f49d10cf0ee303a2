/**
 * Field problems (src/field-problems.ts): services answer codes, the Area C contract renders every one of them,
 * and no service module writes the interface's English itself.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { FIELD_PROBLEMS, parseProblem, problem, type FieldProblem } from '../../src/field-problems';
import { AREA_C_PROBLEM_MESSAGES, renderFieldProblems, renderProblem } from '../../rest-facade/merchant/contract';

const ROOT = path.resolve(__dirname, '../..');

function filesUnder(directory: string): string[] {
  return readdirSync(directory).flatMap((name) => {
    const full = path.join(directory, name);
    return statSync(full).isDirectory() ? filesUnder(full) : full.endsWith('.ts') ? [full] : [];
  });
}

describe('field problems', () => {
  it('round-trips every code with its params through the wire form', () => {
    for (const [code, count] of Object.entries(FIELD_PROBLEMS) as Array<[FieldProblem, number]>) {
      const params = Array.from({ length: count }, (_, index) => `p${index}`);
      expect(parseProblem(problem(code, ...params))).toEqual({ code, params });
    }
    expect(() => problem('max_length')).toThrow('takes 1 params');
    expect(parseProblem('The amount field is required.')).toBeUndefined();
    expect(parseProblem('max_length')).toBeUndefined();
  });

  it('Area C renders every code in words that name its field or params, never the code', () => {
    for (const [code, count] of Object.entries(FIELD_PROBLEMS) as Array<[FieldProblem, number]>) {
      const params = Array.from({ length: count }, (_, index) => `param${index}`);
      const rendered = renderProblem('the_field', problem(code, ...params));
      expect({ code, rendered }).toEqual({ code, rendered: expect.stringMatching(/^[A-Z].*[.]$|^invalid sign$/) });
      expect(rendered).not.toContain('undefined');
      for (const param of params) expect({ code, rendered, has: rendered.includes(param) }).toMatchObject({ has: true });
      expect(typeof AREA_C_PROBLEM_MESSAGES[code]).toBe('function');
    }
  });

  it('renders the documented wording and passes the façade’s own messages through', () => {
    expect(renderFieldProblems({ amount: [problem('max_length', 64), 'The amount field is required.'], user_id: [problem('not_found')] })).toEqual({
      amount: ['The amount may not be greater than 64 characters.', 'The amount field is required.'],
      user_id: ['The selected user_id is invalid.'],
    });
    expect(renderProblem('phone_number', problem('required_without', 'phone_number', 'email'))).toBe(
      'The phone_number field is required when email is not present.',
    );
    expect(renderProblem('phone_number', problem('taken', 'phone number'))).toBe('The phone number has already been taken.');
  });

  it('no Area C service module writes an English sentence for the caller', () => {
    const modules = [
      ...filesUnder(path.join(ROOT, 'src/flows/wallet')),
      ...filesUnder(path.join(ROOT, 'src/flows/deposit')),
      ...filesUnder(path.join(ROOT, 'src/instruments')),
      ...filesUnder(path.join(ROOT, 'src/merchant-auth')),
      ...filesUnder(path.join(ROOT, 'src/preorders')),
      path.join(ROOT, 'src/onboarding/users.ts'),
      path.join(ROOT, 'src/crypto/field-decryption.ts'),
    ];
    const sentences = modules.flatMap((file) => {
      const code = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      return [...code.matchAll(/['"`]The [^'"`]*['"`]/g)].map((match) => `${path.relative(ROOT, file)}: ${match[0]}`);
    });
    expect(sentences).toEqual([]);
  });
});
