"""Opens a report page in headless Chromium (Debian's /usr/bin/chromium, driven
by PyPI's playwright, whose wheel carries its own driver; no browser is
downloaded) from file:// with every network request refused, and prints, as
JSON, what a reader sees: the summary header, the findings, the tables'
cells, the flame graphs' totals and leaf sums (before and after a click to
zoom), a timeline tooltip, console errors and warnings, and every request the
page made. Takes a screenshot. The test (test/integration/test_report_page.py)
compares all of it with the window's summary.

    .deps/venv/bin/python probe_page.py PAGE.html SCREENSHOT.png

Runs under the tests' venv (scripts/python-venv.sh); CHROMIUM overrides the
browser's path."""
import json
import os
import pathlib
import sys

from playwright.sync_api import sync_playwright

# Reads the flame graph shown in #flame: its total, the sum of every box's own
# value, the leaves (name, value) and the labels.
FLAME = """box => {
  const nodes = Array.from(box.querySelectorAll('div.node'));
  return {
    kind: box.dataset.kind,
    total: Number(box.dataset.total),
    self_sum: nodes.reduce((a, n) => a + Number(n.dataset.self), 0),
    leaves: nodes.filter(n => n.dataset.leaf === '1' && !n.classList.contains('ancestor'))
                 .map(n => [n.textContent || n.title, Number(n.dataset.value)]),
    nodes: nodes.length,
    labels: nodes.map(n => n.textContent).filter(t => t),
  };
}"""

TABLES = """tables => Object.fromEntries(tables.map(t => [t.id, {
  head: Array.from(t.querySelectorAll('thead th')).map(th => th.textContent),
  rows: Array.from(t.querySelectorAll('tbody tr')).map(tr => Array.from(tr.children).map(td => td.textContent)),
  // Name cells whose text does not all show (cut, not wrapped).
  clipped: Array.from(t.querySelectorAll('td.name'))
      .filter(td => td.scrollWidth > td.clientWidth + 1 || td.scrollHeight > td.clientHeight + 1)
      .map(td => td.textContent),
}]))"""

FINDINGS = """list => list.map(f => ({
  id: f.dataset.id,
  title: f.querySelector('.title').textContent,
  evidence: f.querySelector('.evidence').textContent.replace(/^evidence: /, ''),
  advice: f.querySelector('.advice').textContent.replace(/^try: /, ''),
}))"""

# The merged job's view, when the page has one.
JOB = """() => {
  const text = document.querySelector('#job-summary');
  if (!text) return null;
  return {
    text: text.textContent,
    straggler: document.querySelector('#job-straggler .title').textContent,
    evidence: Array.from(document.querySelectorAll('#job-straggler .evidence')).map(e => e.textContent),
    bars: document.querySelectorAll('#job svg rect').length,
    tabs: Array.from(document.querySelectorAll('.tabs button')).map(b => b.textContent),
  };
}"""

# After a click on a second-row box: the box on that row now shown, its width against the graph's.
ZOOMED = """(box, value) => {
  const focus = Array.from(box.querySelectorAll('div.node:not(.ancestor)')).find(n => n.style.top === '18px');
  return {value, width: focus ? parseFloat(focus.style.width) : 0, box: box.clientWidth,
          focus_value: focus ? Number(focus.dataset.value) : 0};
}"""


def probe(page_path, screenshot):
    chromium = os.environ.get("CHROMIUM") or "/usr/bin/chromium"
    url = pathlib.Path(page_path).resolve().as_uri()
    result = {"errors": [], "requests": [], "blocked": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium, headless=True,
            # Root in CI: Chromium's sandbox needs user namespaces it may not have.
            args=["--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP * ~NOTFOUND", "--no-proxy-server"])
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 900}, offline=True,
                                          accept_downloads=False)

            def route(r):  # anything but the page itself is refused, and recorded
                if r.request.url == url:
                    r.continue_()
                else:
                    result["blocked"].append(r.request.url)
                    r.abort()

            context.route("**/*", route)
            page = context.new_page()
            page.on("console", lambda m: m.type in ("error", "warning")
                    and result["errors"].append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: result["errors"].append(f"pageerror: {e}"))
            page.on("request", lambda r: result["requests"].append(r.url))
            page.on("requestfailed", lambda r: result["errors"].append(f"requestfailed: {r.url}"))
            page.goto(url, wait_until="load")
            page.wait_for_selector("#flame", timeout=20000)
            page.wait_for_function("() => document.querySelector('#flame').dataset.total !== undefined",
                                   timeout=20000)

            result["title"] = page.title()
            result["header"] = page.eval_on_selector("#summary-header", "e => e.textContent")
            result["findings"] = page.eval_on_selector_all("#findings .finding", FINDINGS)
            result["tables"] = page.eval_on_selector_all("table.data", TABLES)
            result["perfetto"] = page.eval_on_selector("#perfetto-command", "e => e.textContent")
            result["job"] = page.evaluate(JOB)
            result["step_bars"] = page.eval_on_selector_all("#steps svg rect", "r => r.length")

            # Flame graphs: the leaves' own values add up to the root's total.
            result["flame"] = {}
            for kind in ("kernel", "sync", "copy"):
                page.click(f'button[data-kind="{kind}"]')
                result["flame"][kind] = page.eval_on_selector("#flame", FLAME)
            # Click to zoom: the second row's largest box fills the width afterwards.
            page.click('button[data-kind="kernel"]')
            target = page.query_selector('#flame div.node[style*="top: 18px"]')
            if target:
                before = target.evaluate("n => Number(n.dataset.value)")
                target.click()
                result["zoom"] = page.eval_on_selector("#flame", ZOOMED, before)

            # Timeline: hover along the first lane until a tooltip shows.
            canvas = page.query_selector("#timeline canvas")
            if canvas:
                canvas.scroll_into_view_if_needed()
                box = canvas.bounding_box()
                lane_y = box["y"] + 22 + 16 + 10
                x = box["x"] + 215
                while x < box["x"] + box["width"] - 10 and "tooltip" not in result:
                    page.mouse.move(x, lane_y)
                    tip = page.eval_on_selector(".tooltip", "t => t.style.display === 'block' ? t.innerText : ''")
                    if tip:
                        result["tooltip"] = tip
                    x += 3
            page.mouse.move(0, 0)
            page.evaluate("() => window.scrollTo(0, 0)")
            if screenshot:
                page.screenshot(path=screenshot, full_page=True)
            context.close()
        finally:
            browser.close()
    return result


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    print(json.dumps(probe(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else None)))
