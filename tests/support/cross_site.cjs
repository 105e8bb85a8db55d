// A web page on one loopback origin calls a toolgate server on another, as
// an attacker's page would: `fetch(url, {method: 'POST', mode: 'no-cors',
// body: new Blob([json])})` needs no preflight and sends no Content-Type.
// Node serves the page on http://localhost:<port>; the server is at the
// URL given (http://127.0.0.1:<port>/...), another site to the browser.
// Prints {"fetch": "sent" | "<error>"} once the page's fetch settled.
// Usage: node cross_site.cjs TARGET_URL BODY_JSON
const http = require('http');
const { launch } = require('./chromium.cjs');

const [target, body] = process.argv.slice(2);
const page = `<!doctype html><title>waiting</title><script>
fetch(${JSON.stringify(target)}, {method: 'POST', mode: 'no-cors',
  body: new Blob([${JSON.stringify(body)}])})
  .then(() => { document.title = 'sent'; }, (e) => { document.title = 'error: ' + e; });
</script>`;

(async () => {
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(page);
  });
  await new Promise((ok) => server.listen(0, 'localhost', ok));
  const { port } = server.address();
  const browser = await launch();
  try {
    const p = await browser.newPage();
    await p.goto(`http://localhost:${port}/`);
    await p.waitForFunction(() => document.title !== 'waiting', null, { timeout: 60000 });
    const title = await p.title();
    console.log(JSON.stringify({ fetch: title }));
  } finally {
    await browser.close();
    server.close();
  }
})().catch((e) => { console.error(e); process.exit(1); });
