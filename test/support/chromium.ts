/**
 * The browser of the browser tests: Debian's chromium driven by playwright-core, never a downloaded browser.
 * `CHROMIUM_PATH` when set, else /usr/bin/chromium; on a fresh Debian machine where it is missing and the run is
 * root, `npm test` installs the `chromium` package itself (apt-get), so the README's one test command suffices.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const DEBIAN_CHROMIUM_PATH = '/usr/bin/chromium';

function aptGetInstallChromium(): void {
  const install = () =>
    execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  try {
    install();
  } catch {
    execFileSync('apt-get', ['update'], { stdio: ['ignore', 'ignore', 'inherit'] });
    install();
  }
}

/**
 * @returns the chromium executable's path, installing Debian's package first when needed.
 * @throws Error naming what to install when chromium is missing and cannot be installed here (not root, no apt-get).
 */
export function ensureChromium(log: (line: string) => void): string {
  const configured = process.env.CHROMIUM_PATH;
  if (configured) {
    if (!existsSync(configured)) throw new Error(`CHROMIUM_PATH=${configured} does not exist`);
    return configured;
  }
  if (existsSync(DEBIAN_CHROMIUM_PATH)) return DEBIAN_CHROMIUM_PATH;
  const canInstall = process.getuid?.() === 0 && existsSync('/usr/bin/apt-get');
  if (!canInstall) {
    throw new Error(`the browser tests need Debian's chromium at ${DEBIAN_CHROMIUM_PATH}: sudo apt-get install chromium (or set CHROMIUM_PATH)`);
  }
  log('installing Debian chromium for the browser tests (apt-get install chromium; once per machine)');
  aptGetInstallChromium();
  if (!existsSync(DEBIAN_CHROMIUM_PATH)) throw new Error(`apt-get installed chromium but ${DEBIAN_CHROMIUM_PATH} is missing`);
  return DEBIAN_CHROMIUM_PATH;
}

/** The path global-setup resolved (PAYMENTS_TEST_CHROMIUM), for `chromium.launch({ executablePath })`. */
export function chromiumPath(): string {
  return process.env.PAYMENTS_TEST_CHROMIUM ?? DEBIAN_CHROMIUM_PATH;
}
