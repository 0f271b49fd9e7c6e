/**
 * The web console in Chromium against a real `lattice up` with auth on (a caller token): nothing but
 * the login before a key is accepted; then each page at a desktop and a phone size shows the seeded
 * model config and the vss demo, passes axe-core with no serious or critical violation, and is saved
 * as a screenshot under test-output/console/. A reset started from the vss page is followed to
 * SUCCEEDED. The first page's load timings are reported (never asserted).
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { OrchestratorClient } from '../../src/orchestrator/client.js';
import {
  chromiumOrSkip,
  launchChromium,
  outputFolder,
  screenshot,
  seriousAxeViolations,
} from '../support/browser.js';
import { startLattice } from '../support/lattice-up-process.js';
import { eventually } from '../support/servers.js';

const chromium = chromiumOrSkip();
const CALLER = 'console-test';
const KEY = 'console-test-key-1';
/** Start-up of every part plus the vss demo's onboarding on a shared 2-core machine (lattice-up.test.ts). */
const START_TIMEOUT_MS = 180_000;
const VIEWPORTS = [
  { name: 'desktop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
] as const;

describe('the web console on lattice up', { skip: chromium === undefined, timeout: 600_000 }, () => {
  let child: ChildProcess | undefined;
  let base = '';
  let orchestratorAddress = '';
  let browser: Browser;
  const folder = outputFolder('console');

  before(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'lattice-console-'));
    const started = startLattice(['up'], {
      LATTICE_DATA_DIR: dataDir,
      LATTICE_CALLER_TOKENS: `${CALLER}:${KEY}`,
    });
    child = started.child;
    await eventually(
      () => started.output.stdout.includes('Ctrl-C') || started.child.exitCode !== null,
      START_TIMEOUT_MS,
      'lattice up to start',
    );
    const url = /Web console \(API docs at \/docs\)\s+(\S+)/.exec(started.output.stdout)?.[1];
    assert.ok(url, `${started.output.stdout}\n${started.output.stderr}`);
    base = url.replace(/\/$/, '');
    orchestratorAddress = /gRPC orchestrator\.v1 .*\s+(\S+)\n/.exec(started.output.stdout)?.[1] ?? '';
    browser = await launchChromium(chromium!);
  });
  after(async () => {
    await browser?.close();
    child?.kill('SIGKILL');
  });

  /** A page whose sessionStorage holds the key, as after a login in that tab. */
  async function signedIn(viewport: {
    width: number;
    height: number;
  }): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport });
    await context.addInitScript(`sessionStorage.setItem('lattice.apiKey', ${JSON.stringify(KEY)})`);
    return { context, page: await context.newPage() };
  }

  async function checkPage(page: Page, name: string): Promise<void> {
    const violations = await seriousAxeViolations(page);
    const path = await screenshot(page, folder, name);
    assert.deepEqual(
      violations.map(
        (v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
      ),
      [],
      `axe on ${name} (${path})`,
    );
  }

  test('with auth on, nothing but the login shows before a key; a wrong key is refused, the right one opens it', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    try {
      await page.goto(`${base}/`);
      await page.locator('#api-key').waitFor();
      // Time to interactive: the login's key field is usable; with the navigation's own marks.
      // (Evaluated in the page, which has the DOM's types; this file is compiled without them.)
      const timing = (await page.evaluate(`(() => {
        const nav = performance.getEntriesByType('navigation')[0];
        return {
          interactiveMs: performance.now(),
          domInteractive: nav.domInteractive,
          domContentLoaded: nav.domContentLoadedEventEnd,
          load: nav.loadEventEnd,
        };
      })()`)) as { interactiveMs: number; domInteractive: number; domContentLoaded: number; load: number };
      console.log(
        `# console first page (login) on lattice up: usable at ${timing.interactiveMs.toFixed(0)} ms after navigation start ` +
          `(domInteractive ${timing.domInteractive.toFixed(0)} ms, DOMContentLoaded ${timing.domContentLoaded.toFixed(0)} ms, load ${timing.load.toFixed(0)} ms)`,
      );
      assert.equal(await page.locator('header.top, nav').count(), 0, 'no navigation before the key');
      const text = await page.locator('body').innerText();
      assert.doesNotMatch(text, /catalog_ranker|catalog\/products/);
      // The APIs behind the pages refuse the browser too.
      const status = await page.evaluate(async () => (await fetch('/api/v1/vss-admin/models')).status);
      assert.equal(status, 401);
      await checkPage(page, 'login-desktop');

      await page.fill('#api-key', 'not-the-key');
      await page.click('button[type=submit]');
      await page.getByRole('alert').filter({ hasText: 'UNAUTHENTICATED' }).waitFor();
      assert.equal(await page.locator('header.top').count(), 0);
      await checkPage(page, 'login-refused-desktop');

      await page.fill('#api-key', KEY);
      await page.click('button[type=submit]');
      await page.locator('header.top').waitFor();
      assert.match(await page.locator('header.top').innerText(), new RegExp(CALLER));
      await page.getByRole('link', { name: 'catalog_ranker' }).waitFor();
      assert.equal(await page.evaluate(`sessionStorage.getItem('lattice.apiKey')`), KEY);
    } finally {
      await context.close();
    }
  });

  for (const viewport of VIEWPORTS) {
    test(`every page at ${viewport.width}×${viewport.height} shows its data and passes axe`, async () => {
      const { context, page } = await signedIn(viewport);
      const errors: string[] = [];
      page.on('pageerror', (err) => errors.push(err.message));
      try {
        // Model configs: the seeded one, live.
        await page.goto(`${base}/#/models`);
        const row = page.locator('tr', { has: page.getByRole('link', { name: 'catalog_ranker' }) });
        await row.waitFor();
        assert.match(await row.innerText(), /live/);
        await checkPage(page, `models-${viewport.name}`);

        // One config: its DAG and revisions.
        await page.goto(`${base}/#/models/catalog_ranker`);
        await page.getByRole('heading', { name: /catalog_ranker/ }).waitFor();
        await page.locator('.dag svg .node').first().waitFor();
        assert.ok((await page.locator('.dag svg .node').count()) >= 3);
        await page.getByRole('heading', { name: 'Revisions' }).waitFor();
        await checkPage(page, `model-${viewport.name}`);

        await page.goto(`${base}/#/models/catalog_ranker/edit`);
        await page.locator('#document').waitFor();
        await checkPage(page, `editor-${viewport.name}`);

        await page.goto(`${base}/#/predict/catalog_ranker`);
        await page.locator('#config option', { hasText: 'catalog_ranker' }).waitFor({ state: 'attached' });
        // The form writes the request as the proto3 JSON mapping has it (value bytes in base64).
        await page.getByText('Fill a form instead').click();
        await page.getByRole('button', { name: 'Write the request' }).click();
        const written = JSON.parse(await page.inputValue('#request'));
        assert.deepEqual(written, {
          modelConfigId: 'catalog_ranker',
          contextFeatures: [
            { name: 'user_id', dataType: 'DATA_TYPE_STRING', value: Buffer.from('u1').toString('base64') },
          ],
          targets: [{ id: 'c1' }, { id: 'c2' }, { id: 'c3' }],
        });
        await page.locator('pre[data-testid=cli]', { hasText: '--context user_id=u1' }).waitFor();
        await checkPage(page, `predict-${viewport.name}`);

        // vss: the demo's model with both variants READY and their counts.
        await page.goto(`${base}/#/vss`);
        const card = page.locator('section.card', { hasText: 'catalog/products' });
        await card.waitFor();
        for (const variant of ['all', 'shoes']) {
          assert.match(await card.locator('tr', { hasText: variant }).first().innerText(), /READY/);
        }
        // The demo's store, with the entity it serves.
        const storeRow = page.locator('table.stores tbody tr').first();
        await storeRow.waitFor();
        assert.match(await storeRow.innerText(), /catalog/);
        await checkPage(page, `vss-${viewport.name}`);

        await page.goto(`${base}/#/vss/catalog/products`);
        await page.getByRole('heading', { name: 'Versions' }).waitFor();
        await page.locator('td', { hasText: '1,000' }).first().waitFor();
        await checkPage(page, `vss-model-${viewport.name}`);

        await page.locator('a[href^="#/vss/operations/"]').first().click();
        await page.locator('h1 .badge', { hasText: 'SUCCEEDED' }).waitFor();
        await checkPage(page, `vss-operation-${viewport.name}`);

        await page.goto(`${base}/#/search/catalog/products/shoes`);
        await page.locator('#s-variant').waitFor();
        await page.fill('#s-candidate', 'c1');
        await page.fill('#s-attributes', 'category,brand');
        await page.click('form.search-form button[type=submit]');
        await page.locator('table.candidates tbody tr').first().waitFor();
        for (const cell of await page.locator('table.candidates tbody tr').allInnerTexts()) {
          assert.match(cell, /shoes/);
        }
        await checkPage(page, `search-${viewport.name}`);
        assert.deepEqual(errors, [], 'no uncaught errors in the pages');
      } finally {
        await context.close();
      }
    });
  }

  test('a config edited with an error shows it at its path; fixed and applied, its DAG changes; rolled back, it returns; cloned, the copy serves', async () => {
    const { context, page } = await signedIn({ width: 1280, height: 800 });
    try {
      await page.goto(`${base}/#/models/catalog_ranker/edit`);
      const area = page.locator('#document');
      await area.waitFor();
      await page.locator('.badge', { hasText: 'valid' }).first().waitFor();
      const original = JSON.parse(await area.inputValue()) as Record<string, Array<Record<string, unknown>>>;
      const broken = structuredClone(original) as Record<
        string,
        Array<Record<string, Array<Record<string, unknown>>>>
      >;
      broken.model_serving_components![0]!.endpoints![0]!.percentage = 50;
      await area.fill(JSON.stringify(broken, null, 2));
      const problem = page.locator('li.problem', { hasText: 'model_serving_components[0].endpoints' });
      await problem.waitFor();
      await checkPage(page, 'editor-problem-desktop');
      await problem.getByRole('button').click();
      const selected = await page.evaluate(
        `(() => { const el = document.getElementById('document'); return el.value.slice(el.selectionStart, el.selectionEnd); })()`,
      );
      assert.match(String(selected), /^"endpoints": \[/, 'the problem selects its place in the text');

      const fixed = structuredClone(original) as Record<string, Array<Record<string, unknown>>>;
      fixed.compute_components![0]!.deadline_ms = 250;
      await area.fill(JSON.stringify(fixed, null, 2));
      await page.locator('#problems-title .badge', { hasText: /^valid$/ }).waitFor();
      assert.match(await page.locator('pre.diff').innerText(), /\+\s+"deadline_ms": 250/);
      await page.fill('#comment', 'a slower blend');
      await page.getByRole('button', { name: 'Apply' }).click();
      await page.waitForURL(/#\/models\/catalog_ranker$/);
      await page.locator('.dag svg text', { hasText: '250 ms' }).first().waitFor();
      await page.locator('h1 .badge', { hasText: 'live' }).waitFor();
      const newest = page.locator('section[aria-labelledby=revisions-title] tbody tr').first();
      await newest.filter({ hasText: 'a slower blend' }).waitFor();
      assert.match(await newest.innerText(), new RegExp(CALLER));
      await checkPage(page, 'model-applied-desktop');

      // One click (and a confirmation) back to the revision before.
      await page
        .locator('section[aria-labelledby=revisions-title] tbody tr')
        .nth(1)
        .getByRole('button')
        .click();
      await page.getByRole('dialog').getByRole('button', { name: 'Roll back' }).click();
      await page.getByRole('status').filter({ hasText: 'Rolled back' }).waitFor();
      await eventually(
        async () => (await page.locator('.dag svg text', { hasText: '250 ms' }).count()) === 0,
        30_000,
        'the DAG to lose the applied deadline',
      );
      await page
        .locator('section[aria-labelledby=revisions-title] tbody tr')
        .first()
        .filter({ hasText: 'rollback' })
        .waitFor();
      await checkPage(page, 'model-rolled-back-desktop');

      // A clone under a new id serves beside it.
      await page.getByRole('link', { name: 'Clone' }).click();
      await page.locator('#new-id').waitFor();
      await page.locator('#problems-title .badge', { hasText: /^valid$/ }).waitFor();
      await page.fill('#new-id', 'catalog_ranker_copy');
      await page.fill('#comment', 'a copy to try things on');
      await page.getByRole('button', { name: 'Create' }).click();
      await page.waitForURL(/#\/models\/catalog_ranker_copy$/);
      await page.locator('h1 .badge', { hasText: 'live' }).waitFor();
      await page
        .locator('section[aria-labelledby=revisions-title] tbody tr')
        .first()
        .filter({ hasText: 'clone' })
        .waitFor();
    } finally {
      await context.close();
    }
  });

  test('a generated PointWise request answers in the playground what the TypeScript client answers', async () => {
    const { context, page } = await signedIn({ width: 1280, height: 800 });
    const client = new OrchestratorClient(orchestratorAddress, { callerId: CALLER, callerToken: KEY });
    try {
      await page.goto(`${base}/#/predict/catalog_ranker`);
      await page.getByRole('button', { name: 'Generate a request' }).click();
      await eventually(async () => (await page.inputValue('#request')) !== '', 30_000, 'a generated request');
      const request = JSON.parse(await page.inputValue('#request')) as {
        contextFeatures: { name: string; value: string }[];
        targets: { id: string }[];
      };
      await page.getByRole('button', { name: 'Send' }).click();
      const rows = page.locator('table.scores tbody tr');
      await rows.first().waitFor();
      const headers = await page.locator('table.scores thead th').allInnerTexts();
      const column = headers.indexOf('final_score');
      assert.ok(column > 0, headers.join(', '));
      const shown = await page.evaluate(
        `[...document.querySelectorAll('table.scores tbody tr')].map((r) => [...r.children].map((c) => c.textContent))`,
      );
      const answer = await client.pointWise({
        modelConfigId: 'catalog_ranker',
        context: Object.fromEntries(
          request.contextFeatures.map((f) => [f.name, Buffer.from(f.value, 'base64').toString('utf8')]),
        ),
        targets: request.targets.map((target) => ({ id: target.id })),
      });
      assert.deepEqual(
        (shown as string[][]).map((cells) => [cells[0], cells[column]]),
        answer.targets.map((target) => [
          target.id,
          String(Number(Number(target.values.final_score).toPrecision(7))),
        ]),
      );
      // Each component of the DAG with its timing, as the orchestrator measured this request.
      const timed = await page.locator('table.timings tbody th').allInnerTexts();
      const dag = (await (
        await fetch(`${base}/api/v1/models/catalog_ranker/dag`, {
          headers: { authorization: `Bearer ${KEY}` },
        })
      ).json()) as { nodes: { id: string }[] };
      assert.deepEqual([...timed].sort(), dag.nodes.map((node) => node.id).sort());
      // With auth on, the same call from a terminal names the signed-in caller (its token from the environment).
      await page.locator('pre[data-testid=cli]', { hasText: `--caller-id ${CALLER}` }).waitFor();
      await checkPage(page, 'predict-answered-desktop');
    } finally {
      client.close();
      await context.close();
    }
  });

  test('a retrieval config draws its retrievers; a shadow shows its comparison and a split its arms, live', async () => {
    const { context, page } = await signedIn({ width: 1280, height: 800 });
    const client = new OrchestratorClient(orchestratorAddress, { callerId: CALLER, callerToken: KEY });
    const api = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = (await response.json()) as Record<string, unknown>;
      assert.equal(response.status, 200, `${method} ${path}: ${JSON.stringify(json)}`);
      return json;
    };
    try {
      // The seeded recommender: two retrievers above feature_init.
      await page.goto(`${base}/#/models/catalog_recommender`);
      await page.locator('.dag svg .node.retriever').first().waitFor();
      assert.equal(await page.locator('.dag svg .node.retriever').count(), 2);
      const similar = page.locator('table.components tr', {
        has: page.getByRole('rowheader', { name: 'similar_shoes', exact: true }),
      });
      assert.match(await similar.innerText(), /retriever.*products\/shoes k 20 → 10/s);
      await checkPage(page, 'model-retrieval-desktop');

      // A twin of the ranker, a config mirroring to it and one splitting between the two.
      const ranker = (await api('GET', '/api/v1/models/catalog_ranker')).document as Record<string, unknown>;
      const put = (id: string, extra: Record<string, unknown>) =>
        api('PUT', `/api/v1/models/${id}`, {
          document: { ...ranker, model_config_id: id, ...extra },
          comment: `the console test's ${id}`,
        });
      await put('catalog_ranker_b', {});
      await put('catalog_ranker_shadowed', {
        shadow: { model_config_id: 'catalog_ranker_b', percentage: 100, k: 3 },
      });
      await put('catalog_ranker_ab', {
        split: {
          key: 'user_id',
          arms: [
            { model_config_id: 'catalog_ranker', weight: 50 },
            { model_config_id: 'catalog_ranker_b', weight: 50 },
          ],
        },
      });
      const targets = [{ id: 'c1' }, { id: 'c2' }, { id: 'c3' }, { id: 'c4' }];
      await eventually(
        async () => {
          for (const modelConfigId of ['catalog_ranker_shadowed', 'catalog_ranker_ab'])
            for (const user of ['u1', 'u2', 'u3', 'u4', 'u5', 'u6'])
              await client.pointWise({ modelConfigId, context: { user_id: user }, targets });
          return true;
        },
        60_000,
        'the new configs to serve',
      );

      await page.goto(`${base}/#/models/catalog_ranker_shadowed`);
      const shadow = page.locator('section[aria-labelledby=shadow-title]');
      await shadow.getByText('Mirrors 100 % of the requests to').waitFor();
      const compared = shadow.locator('dt:has-text("Compared") + dd');
      await eventually(async () => Number(await compared.innerText()) > 0, 30_000, 'comparisons to show');
      // Identical configs: the same top targets, in the same order.
      assert.equal(await shadow.locator('dt:has-text("Overlap@3") + dd').innerText(), '1.000');
      assert.equal(await shadow.locator('dt:has-text("Kendall τ") + dd').innerText(), '1.000');
      await shadow.locator('table', { hasText: 'ranker' }).waitFor();
      await checkPage(page, 'model-shadow-desktop');

      await page.goto(`${base}/#/models/catalog_ranker_ab`);
      const split = page.locator('section[aria-labelledby=split-title]');
      await split.getByText('user_id').first().waitFor();
      const arms = split.locator('tbody tr');
      assert.equal(await arms.count(), 2);
      assert.match(await arms.nth(0).innerText(), /catalog_ranker\s+50 %/);
      assert.match(await arms.nth(1).innerText(), /catalog_ranker_b\s+50 %/);
      // Six users over two arms: at least one arm served some of them, and its rate shows.
      await eventually(
        async () => (await arms.allInnerTexts()).some((row) => /%\s+\d+\.\d\d\s+0\.0 %\s+\d/.test(row)),
        30_000,
        'an arm to show its live numbers',
      );
      await checkPage(page, 'model-split-desktop');
    } finally {
      client.close();
      await context.close();
    }
  });

  test('a search in the playground is filtered and paged through', async () => {
    const { context, page } = await signedIn({ width: 390, height: 844 });
    try {
      await page.goto(`${base}/#/search/catalog/products/shoes`);
      await page.locator('#s-variant').waitFor();
      await page.fill('#s-candidate', 'c1');
      await page.fill('#s-attributes', 'category,brand,price');
      await page.getByRole('button', { name: 'Add a filter' }).click();
      await page.fill('#f-field-0', 'brand');
      await page.selectOption('#f-op-0', 'IN');
      await page.fill('#f-values-0', 'acme');
      await page.click('form.search-form button[type=submit]');
      const first = page.locator('section[aria-label="Page 1"] table.candidates tbody tr');
      await first.first().waitFor();
      const firstRows = await first.allInnerTexts();
      assert.equal(firstRows.length, 10);
      for (const row of firstRows) assert.match(row, /acme/);
      await page.getByRole('button', { name: 'Next page' }).click();
      const second = page.locator('section[aria-label="Page 2"] table.candidates tbody tr');
      await second.first().waitFor();
      const secondRows = await second.allInnerTexts();
      for (const row of secondRows) assert.match(row, /acme/);
      const ids = (rows: string[]) => rows.map((r) => r.split(/\s+/)[1]);
      assert.equal(
        new Set([...ids(firstRows), ...ids(secondRows)]).size,
        firstRows.length + secondRows.length,
      );
      await checkPage(page, 'search-paged-phone');
    } finally {
      await context.close();
    }
  });

  test('the register forms register a store through the admin API and show its refusal of a variant of no model', async () => {
    const { context, page } = await signedIn({ width: 390, height: 844 });
    try {
      await page.goto(`${base}/#/vss/register`);
      await page.locator('#register-store').waitFor();
      await checkPage(page, 'vss-register-phone');
      await page.getByRole('button', { name: 'Register the store' }).click();
      await page.getByRole('status').filter({ hasText: 'Registered the store.' }).waitFor();
      await page.getByRole('button', { name: 'Register the variant' }).click();
      const refusal = page.getByRole('alert').filter({ hasText: 'The variant was not registered' });
      await refusal.waitFor();
      assert.match(await refusal.innerText(), /my_model/);
    } finally {
      await context.close();
    }
  });

  test('the API docs page shows Swagger UI over the ops server’s OpenAPI document', async () => {
    const { context, page } = await signedIn({ width: 1280, height: 800 });
    try {
      await page.goto(`${base}/docs`);
      await page.locator('.swagger-ui .info .title', { hasText: 'Lattice ops API' }).waitFor();
      await page.locator('.opblock-summary-path', { hasText: '/api/v1/parts' }).first().waitFor();
      await screenshot(page, folder, 'docs-desktop');
    } finally {
      await context.close();
    }
  });

  test('a reset started from the vss page shows its progress until it succeeds, and the variants serve again', async () => {
    const { context, page } = await signedIn({ width: 1280, height: 800 });
    try {
      await page.goto(`${base}/#/vss/catalog/products`);
      await page.getByRole('button', { name: 'Reset' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.waitFor();
      await checkPage(page, 'vss-reset-confirm-desktop');
      await dialog.getByRole('button', { name: 'Reset' }).click();
      await page.waitForURL(/#\/vss\/operations\//);
      const steps = new Set<string>();
      await eventually(
        async () => {
          const label = await page
            .locator('label[for=progress]')
            .textContent()
            .catch(() => null);
          if (label) steps.add(label);
          return (await page.locator('h1 .badge', { hasText: /SUCCEEDED|FAILED/ }).count()) > 0;
        },
        240_000,
        'the reset to finish',
      );
      await checkPage(page, 'vss-reset-done-desktop');
      assert.match(await page.locator('h1 .badge').innerText(), /SUCCEEDED/);
      assert.ok(steps.size >= 2, `the page showed the steps as they advanced: ${[...steps].join(', ')}`);
      await page.goto(`${base}/#/vss/catalog/products`);
      await page.locator('tr', { hasText: 'shoes' }).first().waitFor();
      await eventually(
        async () => /READY/.test(await page.locator('tr', { hasText: 'shoes' }).first().innerText()),
        30_000,
        'the variant to serve the new version',
      );
      await page.locator('td', { hasText: /^2$/ }).first().waitFor();
    } finally {
      await context.close();
    }
  });
});
