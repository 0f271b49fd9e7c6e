/**
 * Debian's Chromium driven by playwright-core for the console's browser tests: no browser download
 * (scripts/test-services.sh installs the package on CI), launched with the flags of a closed network.
 * On CI a missing Chromium fails the run; elsewhere the tests skip with the reason, as servers.ts does
 * for servers.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';

export const CHROMIUM = process.env.LATTICE_TEST_CHROMIUM ?? '/usr/bin/chromium';

/** Nothing reaches out: no update checks, no sync, no component downloads, no GPU. */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** The path to Chromium when it is installed; throws on CI without it, else undefined after saying why. */
export function chromiumOrSkip(): string | undefined {
  if (existsSync(CHROMIUM)) return CHROMIUM;
  const reason = `Chromium is not installed at ${CHROMIUM} (scripts/test-services.sh installs it)`;
  if (process.env.CI) throw new Error(`${reason}; CI requires it`);
  console.log(`# skipping browser tests: ${reason}`);
  return undefined;
}

/**
 * Playwright's launch gives each browser a fresh temporary profile (its --user-data-dir), removed on
 * close, so no state survives from one run to the next.
 */
export function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({ executablePath, args: CHROMIUM_FLAGS, headless: true });
}

/** Where a test's screenshots go (gitignored). */
export function outputFolder(name: string): string {
  const folder = fileURLToPath(new URL(`../../test-output/${name}/`, import.meta.url));
  mkdirSync(folder, { recursive: true });
  return folder;
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

const axeSource = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/** axe-core run in the page (WCAG 2.1 A and AA rules); the violations of serious or critical impact. */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  await page.addScriptTag({ path: axeSource });
  // Evaluated in the page (this file is compiled without the DOM's types).
  const violations = (await page.evaluate(`(async () => {
    const result = await axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
    });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target })),
    }));
  })()`)) as AxeViolation[];
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** A screenshot of the whole page under the output folder; returns its path. */
export async function screenshot(page: Page, folder: string, name: string): Promise<string> {
  const path = join(folder, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
