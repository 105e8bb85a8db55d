// Drives the clarify page in real headless Chromium (Debian's `chromium`,
// through playwright-core): loads it, records any dialog (an injected
// script would raise one), clicks the option given, waits for the
// confirmation, and prints what it saw as JSON.
// Usage: node clarify_page.cjs URL CHOICE [SCREENSHOT.png]
const { launch } = require('./chromium.cjs');

(async () => {
  const [url, choice, shot] = process.argv.slice(2);
  const browser = await launch();
  const page = await browser.newPage({ viewport: { width: 720, height: 560 } });
  const dialogs = [];
  page.on('dialog', async (d) => { dialogs.push(d.message()); await d.dismiss(); });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  // Exactly the link given, as a browser opens it (GET, its own Accept).
  const res = await page.goto(url);
  if (!res.ok()) throw new Error(`GET ${url}: ${res.status()}`);
  const question = await page.textContent('#question');
  const buttons = await page.$$eval('button[data-choice]', (bs) => bs.map((b) => b.textContent));
  if (shot) await page.screenshot({ path: shot });
  await page.click(`button[data-choice="${choice}"]`);
  await page.waitForSelector('#status:not([hidden])');
  const status = await page.textContent('#status');
  console.log(JSON.stringify({ question, buttons, status, dialogs, errors }));
  await browser.close();
})().catch((e) => { console.error(e); process.exit(1); });
