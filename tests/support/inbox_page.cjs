// Drives the operator inbox (/inbox, /inbox/{id}) and the clarify page in
// real headless Chromium (Debian's `chromium`, through playwright-core),
// and prints what it saw as JSON. It fails (exit 1, the reason on stderr)
// when the page does not show what it must.
//
// Usage:
//   node inbox_page.cjs approve BASE TOKEN ID SHOT.png
//     Signs in at BASE/inbox with a wrong token (refused: the form again),
//     then with approver TOKEN, finds approval ID in the
//     list, opens BASE/inbox/ID, checks that its command
//     (`uptime` + 1495 spaces + `; touch X` + U+202E + `gnp.exe`) shows
//     whole, with the `⟨1495 spaces⟩` and `⟨U+202E RLO⟩` markers and a
//     warning, checks the page's markers against
//     tests/fixtures/visible_cases.json, takes a screenshot, clicks
//     Approve and waits for the page to say who approved.
//   node inbox_page.cjs link BASE ID CAP SHOT.png
//     Opens BASE/inbox/ID#cap=CAP (link-holder mode): no sign-in, the page
//     says anyone with the link can decide; clicks Approve.
//   node inbox_page.cjs choice ANSWER_URL TEXT
//     Opens the clarify page's ANSWER_URL with crafted `?choice=` values
//     (each once: a selector built from them used to throw and stop the
//     free-text answer), types TEXT in the free-text box and sends it:
//     each load must POST {"answer": TEXT}. All but the last POST are
//     answered by the script itself; the last reaches the server.
const fs = require('fs');
const path = require('path');
const { launch } = require('./chromium.cjs');

const RLO = '\u202e';
const CRAFTED = ['x"],textarea,[x="', '"', '0"]', '1e0', '-1'];

function fail(why, seen) {
  throw new Error(why + (seen === undefined ? '' : '\n' + JSON.stringify(seen, null, 1)));
}

async function open(browser) {
  const page = await browser.newPage({ viewport: { width: 900, height: 900 } });
  const seen = { dialogs: [], errors: [], console: [] };
  page.on('dialog', async (d) => { seen.dialogs.push(d.message()); await d.dismiss(); });
  page.on('pageerror', (e) => seen.errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') seen.console.push(m.text()); });
  return { page, seen };
}

// Waits for the approval (or the page's error), and fails with what the
// page says unless it can be decided.
async function pendingApproval(page) {
  await page.waitForSelector('#approval-body:not([hidden]) #summary:not(:empty), #message:not([hidden])');
  const said = await page.$eval('#message', (m) => (m.hidden ? null : m.textContent));
  if (said !== null) fail('the page says: ' + said);
  if (await page.$eval('#decide', (d) => d.hidden)) {
    fail('the approval cannot be decided', { status: await page.textContent('#f-status') });
  }
}

async function visibleText(page, selector) {
  return page.$eval(selector, (el) => el.innerText);
}

// The page's own marker code against the shared cases.
async function checkMarkers(page) {
  const file = path.join(__dirname, '../fixtures/visible_cases.json');
  const cases = JSON.parse(fs.readFileSync(file, 'utf8')).cases;
  const got = await page.evaluate((cs) => cs.map((c) => ({
    plain: visiblePlain(c.input),
    warnings: suspicious(c.input),
  })), cases);
  const wrong = [];
  cases.forEach((c, i) => {
    if (got[i].plain !== c.plain || JSON.stringify(got[i].warnings) !== JSON.stringify(c.warnings)) {
      wrong.push({ plain: c.plain, got: got[i] });
    }
  });
  if (wrong.length) fail('the page marks text unlike shown.rs', wrong);
  return cases.length;
}

async function approve(browser, base, token, id, shot) {
  const { page, seen } = await open(browser);
  let res = await page.goto(base + '/inbox');
  if (!res.ok()) fail(`GET ${base}/inbox: ${res.status()}`);
  // Not signed in: the form, with a password field.
  await page.waitForSelector('#sign-in:not([hidden])');
  if ((await page.getAttribute('#token', 'type')) !== 'password') fail('the token field is not a password field');
  // A wrong token: the server's refusal, and the form again.
  await page.fill('#token', 'not-an-approver-token-' + Date.now());
  await page.press('#token', 'Enter');
  await page.waitForSelector('#message:not([hidden])');
  const refused = await page.textContent('#message');
  if (await page.$eval('#sign-in', (f) => f.hidden)) fail('a refused token does not show the sign-in form again');
  if (await page.evaluate(() => sessionStorage.length) !== 0) fail('a refused token stays stored');
  await page.fill('#token', token);
  await page.press('#token', 'Enter');
  await page.waitForSelector('#inbox:not([hidden])');
  const stored = await page.evaluate(() => Object.keys(sessionStorage));
  const listed = await page.$$eval('#approvals a', (as) => as.map((a) => a.getAttribute('href')));
  if (!listed.some((h) => h.endsWith('/inbox/' + id))) fail('approval not listed', { listed });
  const listText = await visibleText(page, '#approvals');
  // The approval, from its link (a navigation: the token stays in the tab).
  await page.click(`#approvals a[href$="/inbox/${id}"]`);
  await pendingApproval(page);
  const text = await visibleText(page, '#approval');
  for (const want of ['; touch X', '\u27e81495 spaces\u27e9', '\u27e8U+202E RLO\u27e9', 'gnp.exe', 'Look closely']) {
    if (!text.includes(want)) fail(`the page does not show ${JSON.stringify(want)}`, { text });
  }
  if (text.includes(RLO)) fail('a raw right-to-left override reached the page');
  if (/ {9}/.test(text)) fail('a run of spaces reached the page');
  const labels = await page.$$eval('#details .field-label', (hs) => hs.map((h) => h.textContent));
  const markers = await page.$$eval('#details .ctl', (ss) => ss.map((s) => ({ text: s.textContent, title: s.title })));
  const vectors = await checkMarkers(page);
  if (shot) await page.screenshot({ path: shot, fullPage: true });
  await page.click('#approve');
  await page.waitForSelector('#result:not([hidden])');
  const result = await page.textContent('#result');
  if (!/^Approved by /.test(result)) fail('the page does not say it was approved', { result });
  const status = await page.textContent('#f-status');
  const buttonsHidden = await page.$eval('#decide', (d) => d.hidden);
  // The same page for another look: still approved, no buttons.
  await page.reload();
  await page.waitForSelector('#result:not([hidden])');
  const after = await page.textContent('#result');
  if (seen.errors.length || seen.dialogs.length) fail('the page raised errors or dialogs', seen);
  return { refused, stored, listed, listText, text, labels, markers, vectors, result, status, buttonsHidden, after, ...seen };
}

async function link(browser, base, id, cap, shot) {
  const { page, seen } = await open(browser);
  const res = await page.goto(`${base}/inbox/${id}#cap=${encodeURIComponent(cap)}`);
  if (!res.ok()) fail(`GET ${base}/inbox/${id}: ${res.status()}`);
  await pendingApproval(page);
  const note = await page.$eval('#link-note', (n) => (n.hidden ? null : n.textContent));
  if (!note || !note.includes('Anyone with this link can decide')) fail('no link-holder note', { note });
  const signIn = await page.$eval('#sign-in', (f) => f.hidden);
  if (!signIn) fail('link-holder mode shows the sign-in form');
  const text = await visibleText(page, '#approval');
  if (shot) await page.screenshot({ path: shot, fullPage: true });
  await page.click('#approve');
  await page.waitForSelector('#result:not([hidden])');
  const result = await page.textContent('#result');
  if (!/^Approved by /.test(result)) fail('the page does not say it was approved', { result });
  if (seen.errors.length || seen.dialogs.length) fail('the page raised errors or dialogs', seen);
  return { note, text, result, ...seen };
}

async function choice(browser, url, answer) {
  // A well-formed link still focuses its option, and answers nothing.
  const { page: first, seen } = await open(browser);
  await first.goto(`${url}${url.includes('?') ? '&' : '?'}choice=1`);
  const focusedChoice = await first.evaluate(() => document.activeElement && document.activeElement.dataset.choice);
  if (focusedChoice !== '1') fail('?choice=1 does not focus option 1', { focusedChoice, ...seen });
  await first.close();
  const variants = [];
  for (const [i, crafted] of CRAFTED.entries()) {
    const last = i === CRAFTED.length - 1;
    const { page, seen } = await open(browser);
    const posted = [];
    await page.route('**/answer', async (route) => {
      const req = route.request();
      if (req.method() !== 'POST') return route.continue();
      posted.push(req.postDataJSON());
      if (last) return route.continue();
      return route.fulfill({
        status: 200,
        contentType: 'application/json',
        body: JSON.stringify({ status: 'answered', answer: posted[posted.length - 1].answer }),
      });
    });
    const target = `${url}${url.includes('?') ? '&' : '?'}choice=${encodeURIComponent(crafted)}`;
    const res = await page.goto(target);
    if (!res.ok()) fail(`GET ${target}: ${res.status()}`);
    const focused = await page.evaluate(() => document.activeElement && document.activeElement.id);
    await page.fill('#free', answer);
    // A form the script does not handle submits natively, which the CSP
    // (form-action 'none') blocks: nothing to wait for then.
    await page.click('#answer-form button[type=submit]', { noWaitAfter: true });
    const shown = await page.waitForSelector('#status:not([hidden])', { timeout: 5000 }).catch(() => null);
    const status = shown ? await page.textContent('#status') : null;
    const v = { crafted, posted, status, focused, ...seen };
    variants.push(v);
    if (posted.length !== 1 || posted[0].answer !== answer) fail(`with ?choice=${crafted} the free-text answer was not sent`, v);
    if (!status || !status.includes(answer)) fail(`with ?choice=${crafted} the page does not confirm the answer`, v);
    if (seen.errors.length || seen.dialogs.length) fail('the page raised errors or dialogs', v);
    await page.close();
  }
  return { variants, focusedChoice };
}

(async () => {
  const [mode, ...args] = process.argv.slice(2);
  const browser = await launch();
  try {
    let out;
    if (mode === 'approve') out = await approve(browser, ...args);
    else if (mode === 'link') out = await link(browser, ...args);
    else if (mode === 'choice') out = await choice(browser, ...args);
    else fail(`unknown mode ${mode}: approve, link or choice`);
    console.log(JSON.stringify(out));
  } finally {
    await browser.close();
  }
})().catch((e) => { console.error(e); process.exit(1); });
