// Keystroke -> results painted in `trove serve`'s page, in headless Chromium
// (puppeteer-core). For each query: type all but its last letter and wait
// for that answer, then press the last key and time, on the page's own clock
// (performance.now, the timeline the keydown event is stamped on):
//   t0      the keydown event's timeStamp
//   commit  the first animation frame after the result list changed to the
//           full query's answer (the frame that paints it starts)
//   painted the frame after that one (the paint has happened)
//   fetch   the fragment request, start to last byte (resource timing)
//   search  the search inside the server (the result list's "· N ms")
// Prints one JSON line: {n, commit_ms, painted_ms, fetch_ms, search_ms}, each {p50, p95}.
//
//   node bench/web_latency.mjs --chromium PATH --url URL --modules DIR [--runs N] QUERY...
import { createRequire } from 'node:module';
import path from 'node:path';

const argv = process.argv.slice(2);
const opt = {};
const queries = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i].startsWith('--')) opt[argv[i].slice(2)] = argv[++i];
  else queries.push(argv[i]);
}
const require = createRequire(path.join(opt.modules, 'x.js'));
const puppeteer = require('puppeteer-core');
const runs = Number(opt.runs || 3);

const browser = await puppeteer.launch({ executablePath: opt.chromium, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
const page = await browser.newPage();
await page.setViewport({ width: 1280, height: 820 });
await page.goto(opt.url, { waitUntil: 'networkidle0' });

const answered = (q) => page.waitForFunction((v) => {
  const r = document.getElementById('results');
  return r && new URLSearchParams(r.dataset.for || '').get('q') === v;
}, { timeout: 20000 }, q);

const commit = [], painted = [], fetched = [], server = [];
for (let run = 0; run < runs; run++) {
  for (const q of queries) {
    await page.$eval('#q', (el) => { el.value = ''; el.focus(); });
    const head = q.slice(0, -1), last = q.slice(-1);
    await page.type('#q', head);
    await answered(head);
    await page.evaluate((full) => {
      performance.clearResourceTimings();   // its buffer holds 250 entries
      window.__lat = new Promise((resolve) => {
        const r = document.getElementById('results');
        let t0 = 0;
        document.addEventListener('keydown', (e) => { t0 = e.timeStamp; }, { once: true, capture: true });
        const mo = new MutationObserver(() => {
          if (new URLSearchParams(r.dataset.for || '').get('q') !== full) return;
          mo.disconnect();
          requestAnimationFrame((a) => requestAnimationFrame((b) => {
            // the request that answered: its time on the wire and in the server
            const res = performance.getEntriesByType('resource').filter((e) => e.name.includes('frag=1'));
            const last = res[res.length - 1];
            const m = /· (\d+) ms/.exec(r.querySelector('.summary')?.textContent || '');
            resolve({ commit: a - t0, painted: b - t0, fetch: last ? last.responseEnd - last.startTime : NaN,
                      server: m ? Number(m[1]) : NaN });
          }));
        });
        mo.observe(r, { attributes: true, childList: true });
      });
    }, q);
    await page.keyboard.press(last.length === 1 && /[\x20-\x7e]/.test(last) ? last : 'End');
    if (!/[\x20-\x7e]/.test(last)) await page.keyboard.sendCharacter(last);
    const t = await page.evaluate(() => window.__lat);
    if (run > 0 || runs === 1) {
      commit.push(t.commit); painted.push(t.painted); fetched.push(t.fetch); server.push(t.server);
    }
  }
}
await browser.close();
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return Math.round(s[Math.min(s.length - 1, Math.floor(p * s.length))] * 10) / 10; };
console.log(JSON.stringify({ n: commit.length,
  commit_ms: { p50: pct(commit, 0.5), p95: pct(commit, 0.95) },
  painted_ms: { p50: pct(painted, 0.5), p95: pct(painted, 0.95) },
  fetch_ms: { p50: pct(fetched, 0.5), p95: pct(fetched, 0.95) },
  search_ms: { p50: pct(server, 0.5), p95: pct(server, 0.95) } }));
