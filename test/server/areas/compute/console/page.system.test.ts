// The console page as a front-end developer uses it: a console URL collected from the API, opened
// in Chromium on the platform's /console page (xterm.js served from the platform, nothing from a
// CDN), typed into, and read back from the terminal on screen.
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { collectConsoleUrl } from '../../../../support/console-client.ts';
import { startTestServer, type TestServer } from '../../../../support/server.ts';
import { runningVm } from '../fixtures.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

let server: TestServer;
let browser: Browser;
beforeAll(async () => {
  [server, browser] = await Promise.all([
    startTestServer({ CONSOLE_CHECK_INTERVAL_MS: '100' }),
    chromium.launch({ executablePath: CHROMIUM, headless: true }),
  ]);
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** The terminal's screen as the user sees it, one line per row. */
const screen = (page: Page) => page.locator('.xterm-rows').innerText();

async function waitForScreen(page: Page, pattern: RegExp): Promise<string> {
  await expect.poll(() => screen(page), { timeout: 15_000 }).toMatch(pattern);
  return screen(page);
}

/** Opens the page on a console URL and records every request the page makes. */
async function openConsolePage(url: string): Promise<{ page: Page; requests: string[] }> {
  const page = await browser.newPage();
  const requests: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  await page.goto(`${server.url}/console#${encodeURIComponent(url)}`);
  return { page, requests };
}

describe('the console page', () => {
  test('opens a collected console URL in the browser: log in, type a command, read the answer', async () => {
    const vm = await runningVm(server, server.org);
    const { page, requests } = await openConsolePage(await collectConsoleUrl(server, server.org, vm.id));
    await waitForScreen(page, new RegExp(`${vm.name} login:`));
    await expect.poll(() => page.locator('#status').innerText()).toContain('Connected');
    await page.locator('.xterm-helper-textarea').focus();
    await page.keyboard.type('root');
    await page.keyboard.press('Enter');
    await waitForScreen(page, /Password:/);
    await page.keyboard.type('hunter2');
    await page.keyboard.press('Enter');
    await waitForScreen(page, new RegExp(`root@${vm.name}:~#`));
    await page.keyboard.type('hostname -I');
    await page.keyboard.press('Enter');
    const shown = await waitForScreen(page, /hostname -I\n10\.\d+\.\d+\.\d+ 198\.18\.\d+\.\d+/);
    // The password never appeared on screen.
    expect(shown).not.toContain('hunter2');
    // The secret URL left the address bar, and every request stayed on the platform.
    expect(page.url()).toBe(`${server.url}/console`);
    const origin = new URL(server.url).host;
    expect(requests.every((request) => new URL(request).host === origin)).toBe(true);
    expect(requests).toContain(`${server.url}/console/assets/xterm.js`);
    await page.close();
  });

  test('says why a session ended: the instance deleted mid-session', async () => {
    const vm = await runningVm(server, server.org);
    const { page } = await openConsolePage(await collectConsoleUrl(server, server.org, vm.id));
    await waitForScreen(page, /login:/);
    expect((await server.org.call('DELETE', `/compute/vms/${vm.id}`)).status).toBe(202);
    await expect
      .poll(() => page.locator('#status').innerText(), { timeout: 15_000 })
      .toBe('Disconnected (4004: The instance was deleted.)');
    await page.close();
  });

  test('a URL already used is refused, and the page says so', async () => {
    const vm = await runningVm(server, server.org);
    const url = await collectConsoleUrl(server, server.org, vm.id);
    const first = await openConsolePage(url);
    await waitForScreen(first.page, /login:/);
    const second = await openConsolePage(url);
    await expect
      .poll(() => second.page.locator('#status').innerText(), { timeout: 15_000 })
      .toContain('The console refused the connection');
    await Promise.all([first.page.close(), second.page.close()]);
  });
});
