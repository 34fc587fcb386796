// Loads a folded-stacks file into speedscope (the npm package's own web app,
// as its command line opens it: index.html#localProfilePath=<script that
// hands it the file>), in headless Chromium, then exports the profile in
// speedscope's JSON format through its "Export" button and prints, as JSON,
// the profile's name, its stacks and the sum of its weights: what speedscope
// understood of the file.
//
//   node speedscope_total.mjs STACKS.txt WORK_DIR
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const [stacksPath, workDir] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const index = path.join(path.dirname(require.resolve('speedscope/package.json')), 'dist/release/index.html');
const loader = path.resolve(workDir, 'load-stacks.js');
const name = path.basename(stacksPath);
fs.writeFileSync(loader, `speedscope.loadFileFromBase64(${JSON.stringify(name)}, ${JSON.stringify(fs.readFileSync(stacksPath).toString('base64'))})`);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--allow-file-access-from-files', '--host-resolver-rules=MAP * ~NOTFOUND'],
});
const out = { errors: [] };
try {
  const context = await browser.newContext({ acceptDownloads: true, offline: true });
  const page = await context.newPage();
  page.on('pageerror', (e) => out.errors.push(e.message));
  await page.goto(pathToFileURL(index).href + '#localProfilePath=' + loader.replace(/^\//, ''));
  await page.getByText(/Export$/).waitFor({ timeout: 30000 });
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: 30000 }), page.getByText(/Export$/).click()]);
  const file = path.join(workDir, 'export.speedscope.json');
  await download.saveAs(file);
  const exported = JSON.parse(fs.readFileSync(file, 'utf8'));
  const names = exported.shared.frames.map((f) => f.name);
  // Speedscope exports what it imported as an "evented" profile (open and
  // close events at cumulative weights) or a "sampled" one: both give each
  // stack its weight.
  out.profiles = exported.profiles.map((p) => {
    const stacks = new Map();
    const add = (frames, w) => {
      if (!frames.length || w <= 0) return;
      const key = frames.map((f) => names[f]).join(';');
      stacks.set(key, (stacks.get(key) || 0) + w);
    };
    if (p.type === 'evented') {
      const open = [];
      let at = p.startValue;
      for (const e of p.events) {
        add(open, e.at - at);
        at = e.at;
        if (e.type === 'O') open.push(e.frame);
        else open.pop();
      }
    } else {
      p.samples.forEach((s, i) => add(s, p.weights[i]));
    }
    const list = Array.from(stacks.entries());
    return { name: p.name, type: p.type, unit: p.unit, total: list.reduce((a, [, w]) => a + w, 0), stacks: list };
  });
  await context.close();
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out));
