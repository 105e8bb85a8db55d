// Starts Debian's headless Chromium through playwright-core for the page
// tests. A launch that crashes (seen once in five CI runs: SIGSEGV before
// the first page, while other tests loaded the machine) is Chromium's own
// failure, before anything of ours loads: it is tried again, up to three
// times, and each failure is printed on stderr.
// --no-sandbox: the tests run as root in a container, where Chromium's
// own sandbox cannot start.
const { chromium } = require(process.env.TOOLGATE_TEST_TOOLS + '/node_modules/playwright-core');

async function launch() {
  for (let attempt = 1; ; attempt++) {
    try {
      return await chromium.launch({
        executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
        args: ['--no-sandbox'],
      });
    } catch (e) {
      if (attempt >= 3) throw e;
      process.stderr.write(`Chromium's launch ${attempt} failed, trying again: ${String(e).split('\n')[0]}\n`);
    }
  }
}

module.exports = { launch };
