// The docs page in headless Chromium, as a reader opens it from disk: it fetches nothing from the
// network, lists the local servers beside production, has a page of every error code, and every
// operation shows its curl and TypeScript samples. It is built as `npm run docs` builds it, into
// site/, which git ignores: docs/ holds the documentation's pages, which are tracked.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { errorCodes } from '../../scripts/lib/error-codes.ts';
import { bin, repoRoot, run } from '../../scripts/lib/run.ts';
import { loadBundle } from '../support/contract.ts';

const bundle = loadBundle() as unknown as Record<string, any>;
const operations = Object.values(bundle.paths as Record<string, Record<string, any>>).flatMap((item) =>
  ['get', 'put', 'post', 'delete', 'patch'].filter((method) => item[method]).map((method) => ({ method, ...item[method] })),
) as Array<{ method: string; operationId: string; tags: string[] }>;
const slug = (text: string) => text.toLowerCase().replace(/[^a-z0-9]+/g, '-');

const site = path.join(repoRoot, 'site', 'index.html');
let url: string;
let browser: Browser;
let page: Page;
const external: string[] = [];

beforeAll(async () => {
  const built = await run(bin('tsx'), [path.join(repoRoot, 'scripts', 'build-docs.ts')]);
  if (built.code !== 0) throw new Error(`npm run docs failed:\n${built.stdout}\n${built.stderr}`);
  url = pathToFileURL(site).href;
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(10_000);
  await page.route('**/*', async (route) => {
    const requested = route.request().url();
    if (requested.startsWith('file:') || requested.startsWith('data:') || requested.startsWith('blob:')) return route.continue();
    external.push(requested);
    return route.abort();
  });
  await page.goto(url);
  await page.waitForSelector('[data-section-id]');
}, 180_000);

afterAll(async () => {
  await browser?.close();
});

describe('npm run docs', () => {
  test('writes the page to site/, which git ignores, not to docs/, where the pages are tracked', async () => {
    expect(existsSync(site)).toBe(true);
    expect((await run('git', ['check-ignore', '--quiet', 'site/index.html'])).code).toBe(0);
    expect((await run('git', ['check-ignore', '--quiet', 'docs/README.md'])).code).toBe(1);
  });
});

describe('the docs page', () => {
  test('renders the introduction with the versioning policy, and fetches nothing from the network', async () => {
    const text = await page.locator('body').innerText();
    expect(text).toContain('Cloud Platform API');
    await expect(page.locator('[data-section-id="/section/versioning"]').innerText()).resolves.toMatch(/Deprecation[\s\S]*Sunset/);
    expect(external).toEqual([]);
  });

  test('has a page of every error code with its status', async () => {
    const section = await page.locator('[data-section-id="/section/error-codes"]').innerText();
    const codes = errorCodes(bundle);
    expect(codes.length).toBeGreaterThan(30);
    for (const { code, status } of codes) expect(section).toMatch(new RegExp(`\\b${code}\\s+${status}\\b`));
  });

  test('lists the local server and the mock beside production', async () => {
    await page.goto(`${url}#/billing/getbilling`);
    const panel = page.locator('[data-section-id="/billing/getbilling"] .panel-request-samples');
    await panel.locator('[data-component-name="Dropdown/Dropdown"]').first().locator('button').first().click();
    const servers = await panel.locator('[data-component-name="Dropdown/DropdownMenu"]').first().innerText();
    for (const server of ['https://api.cloudplatform.dev', 'http://127.0.0.1:8080', 'http://127.0.0.1:4010'])
      expect(servers).toContain(server);
    await page.keyboard.press('Escape');
  });

  // The language is chosen once for the whole page (Redoc keeps it), so each language is one pass.
  test.each([
    ['curl', (operation: { method: string }) => `curl -sS -X ${operation.method.toUpperCase()} "$BASE_URL/`],
    ['TypeScript', (operation: { operationId: string }) => `await client.call('${operation.operationId}'`],
  ])(
    `every operation (${operations.length}) shows its %s sample`,
    async (language, expected) => {
      const wrong: string[] = [];
      let chosen = false;
      for (const operation of operations) {
        const id = `/${slug(operation.tags[0]!)}/${operation.operationId.toLowerCase()}`;
        await page.goto(`${url}#${id}`);
        const panel = page.locator(`[data-section-id="${id}"] .panel-request-samples`);
        try {
          await panel.waitFor();
          if (!chosen) {
            await panel.locator('[data-component-name="Dropdown/Dropdown"]').nth(1).locator('button').first().click();
            await page
              .locator('[role="menuitem"]:visible', { hasText: new RegExp(`^\\s*${language}\\s*$`) })
              .first()
              .click();
            chosen = true;
          }
          // The block can be in the page before Redoc has written the sample into it (it was empty
          // once, on a loaded machine): its text is read again until it holds the sample, for as
          // long as a busy machine may take to render it (a wrong sample never turns right).
          const block = panel.locator('[data-component-name="CodeBlock/CodeBlockContainer"]').first();
          let sample = await block.innerText();
          for (const deadline = Date.now() + 20_000; !sample.includes(expected(operation)) && Date.now() < deadline;) {
            await page.waitForTimeout(50);
            sample = await block.innerText();
          }
          if (!sample.includes(expected(operation))) wrong.push(`${operation.operationId}: ${sample.slice(0, 100)}`);
        } catch (error) {
          wrong.push(`${operation.operationId}: ${String(error).split('\n')[0]}`);
        }
      }
      expect(wrong).toEqual([]);
    },
    300_000,
  );
});
