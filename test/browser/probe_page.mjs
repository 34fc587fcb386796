// Opens a report page in headless Chromium (Debian's, driven by
// playwright-core) from file:// with every network request refused, and
// prints, as JSON, what a reader sees: the summary header, the findings, the
// tables' cells, the flame graphs' totals and leaf sums (before and after a
// click to zoom), a timeline tooltip, console errors and every request the
// page made. Takes a screenshot. The test (test/integration/test_report_page.py)
// compares all of it with the window's summary.
//
//   node probe_page.mjs PAGE.html SCREENSHOT.png
import { chromium } from 'playwright-core';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [pagePath, screenshot] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const browser = await chromium.launch({
  executablePath,
  headless: true,
  // Root in CI: Chromium's sandbox needs user namespaces it may not have.
  args: ['--no-sandbox', '--disable-gpu', '--host-resolver-rules=MAP * ~NOTFOUND', '--no-proxy-server'],
});
const result = { errors: [], requests: [], blocked: [] };
try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, offline: true, acceptDownloads: false });
  const url = pathToFileURL(path.resolve(pagePath)).href;
  // Anything but the page itself is refused (and recorded).
  await context.route('**/*', (route) => {
    const u = route.request().url();
    if (u === url) return route.continue();
    result.blocked.push(u);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') result.errors.push(m.type() + ': ' + m.text()); });
  page.on('pageerror', (e) => result.errors.push('pageerror: ' + e.message));
  page.on('request', (r) => result.requests.push(r.url()));
  page.on('requestfailed', (r) => result.errors.push('requestfailed: ' + r.url()));
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForSelector('#flame', { timeout: 20000 });
  await page.waitForFunction(() => document.querySelector('#flame').dataset.total !== undefined, null, { timeout: 20000 });

  result.title = await page.title();
  result.header = await page.$eval('#summary-header', (e) => e.textContent);
  result.findings = await page.$$eval('#findings .finding', (list) => list.map((f) => ({
    id: f.dataset.id,
    title: f.querySelector('.title').textContent,
    evidence: f.querySelector('.evidence').textContent.replace(/^evidence: /, ''),
    advice: f.querySelector('.advice').textContent.replace(/^try: /, ''),
  })));
  result.tables = await page.$$eval('table.data', (tables) => Object.fromEntries(tables.map((t) => [t.id, {
    head: Array.from(t.querySelectorAll('thead th')).map((th) => th.textContent),
    rows: Array.from(t.querySelectorAll('tbody tr')).map((tr) => Array.from(tr.children).map((td) => td.textContent)),
  }])));
  result.perfetto = await page.$eval('#perfetto-command', (e) => e.textContent);
  // The merged job's view, when the page has one.
  result.job = await page.evaluate(() => {
    const text = document.querySelector('#job-summary');
    if (!text) return null;
    return {
      text: text.textContent,
      straggler: document.querySelector('#job-straggler .title').textContent,
      evidence: Array.from(document.querySelectorAll('#job-straggler .evidence')).map((e) => e.textContent),
      bars: document.querySelectorAll('#job svg rect').length,
      tabs: Array.from(document.querySelectorAll('.tabs button')).map((b) => b.textContent),
    };
  });
  result.step_bars = await page.$$eval('#steps svg rect', (r) => r.length);

  // Flame graphs: the leaves' own values add up to the root's total.
  const flame = () => page.$eval('#flame', (box) => {
    const nodes = Array.from(box.querySelectorAll('div.node'));
    return {
      kind: box.dataset.kind,
      total: Number(box.dataset.total),
      self_sum: nodes.reduce((a, n) => a + Number(n.dataset.self), 0),
      leaves: nodes.filter((n) => n.dataset.leaf === '1' && !n.classList.contains('ancestor')).map((n) => [n.textContent || n.title, Number(n.dataset.value)]),
      nodes: nodes.length,
      labels: nodes.map((n) => n.textContent).filter((t) => t),
    };
  });
  result.flame = {};
  for (const kind of ['kernel', 'sync', 'copy']) {
    await page.click(`button[data-kind="${kind}"]`);
    result.flame[kind] = await flame();
  }
  // Click to zoom: the second row's largest box fills the width afterwards.
  await page.click('button[data-kind="kernel"]');
  const target = await page.$('#flame div.node[style*="top: 18px"]');
  if (target) {
    const before = await target.evaluate((n) => Number(n.dataset.value));
    await target.click();
    result.zoom = await page.$eval('#flame', (box, value) => {
      const full = box.clientWidth;
      const focus = Array.from(box.querySelectorAll('div.node:not(.ancestor)')).find((n) => n.style.top === '18px');
      return { value, width: focus ? parseFloat(focus.style.width) : 0, box: full, focus_value: focus ? Number(focus.dataset.value) : 0 };
    }, before);
  }

  // Timeline: hover along the first lane until a tooltip shows.
  const canvas = await page.$('#timeline canvas');
  if (canvas) {
    await canvas.scrollIntoViewIfNeeded();
    const box = await canvas.boundingBox();
    const laneY = box.y + 22 + 16 + 10;
    for (let x = box.x + 215; x < box.x + box.width - 10 && !result.tooltip; x += 3) {
      await page.mouse.move(x, laneY);
      const tip = await page.$eval('.tooltip', (t) => (t.style.display === 'block' ? t.innerText : ''));
      if (tip) result.tooltip = tip;
    }
  }
  await page.mouse.move(0, 0);
  await page.evaluate(() => window.scrollTo(0, 0));
  if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
  await context.close();
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(result));
