/**
 * What every dashboard page is checked for in the browser tests: axe-core (WCAG 2 A/AA rules) finds no violation,
 * and at 390, 1280 and 1440 px wide the page does not scroll sideways (a wide table scrolls inside its own box);
 * then a full-page screenshot at 1280 px in test-artifacts/dashboard/ (git-ignored).
 *
 * axe-core runs through the DevTools protocol (page.evaluate), which the pages' CSP (no script at all) does not
 * govern: nothing is added to the page.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';

export const DASHBOARD_ARTIFACTS = path.join(__dirname, '..', '..', 'test-artifacts', 'dashboard');
export const AUDIT_WIDTHS = [390, 1280, 1440] as const;

const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  help: string;
  nodes: Array<{ target: string[] }>;
}

/** axe-core's violations on the page as it is now (id, help, the first targets). */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  // A text evaluated in the page (the test's TypeScript knows no DOM).
  const violations = (await page.evaluate(
    "axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } }).then((result) => result.violations)",
  )) as AxeViolation[];
  return violations.map((violation) => `${violation.id}: ${violation.help} (${violation.nodes.slice(0, 3).map((node) => node.target.join(' ')).join(', ')})`);
}

/** The widths (of AUDIT_WIDTHS) at which the document is wider than the viewport. */
export async function overflowingWidths(page: Page): Promise<number[]> {
  const overflowing: number[] = [];
  for (const width of AUDIT_WIDTHS) {
    await page.setViewportSize({ width, height: 900 });
    const wider = (await page.evaluate('document.documentElement.scrollWidth > window.innerWidth')) as boolean;
    if (wider) overflowing.push(width);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  return overflowing;
}

/** axe-core clean, no sideways scrolling at any audit width, and a screenshot `<name>.png`. */
export async function auditPage(page: Page, name: string): Promise<{ violations: string[]; overflowing: number[] }> {
  const violations = await axeViolations(page);
  const overflowing = await overflowingWidths(page);
  await page.screenshot({ path: path.join(DASHBOARD_ARTIFACTS, `${name}.png`), fullPage: true });
  return { violations, overflowing };
}
