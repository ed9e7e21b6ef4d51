// Keystroke -> results painted in `trove serve`'s page, in headless Chromium
// (puppeteer-core), on the page's own clock (performance.now, the timeline
// the keydown event is stamped on).
//
// Two ways to type each query (--mode):
//   settle  type all but its last letter, wait until the page shows that
//           answer, wait --pause ms (default 0), press the last key; time it
//   typing  type the whole query at one key per --key-ms ms (default 90, a
//           fast typist: keys come while answers are still on their way);
//           time the last key
// For the timed key, t0 is its keydown event's timeStamp, and:
//   paint    when the frame that shows the full query's answer was painted:
//            the renderTime of an Element Timing entry (Chromium's
//            performance timeline) for the result list's summary line,
//            which the bench marks with `elementtiming` when the list changes
//   commit   the first animation frame after the list changed (that frame
//            begins)
//   painted  the frame after it (an upper bound on the paint: kept to
//            compare with earlier numbers)
//   send     t0 to the start of the fragment request that answered
//   fetch    that request, start to last byte (resource timing)
//   search   the search inside the server (the result list's "· N ms")
//   dom      last byte to the list changed in the DOM (text(), innerHTML)
//   gap      the time since the key before the timed one
// Prints one JSON line: {mode, n, paint_ms, commit_ms, painted_ms, send_ms,
// fetch_ms, dom_ms, search_ms, gap_ms}, each {p50, p95}.
//
// --trace: Chromium's tracing (devtools.timeline) over the counted runs; adds
// main_ms: the renderer main thread's time from t0 to paint per key: `wall`
// (its events' wall-clock time), `cpu` (their thread CPU time) and the CPU
// time by kind (scripting, parse, style, layout, paint, other), {p50, p95}.
// It includes the bench's own small callbacks and the typing itself.
// Tracing slows the page: take latencies from a run without it.
// --trace-out FILE: the trace too (chrome://tracing, Perfetto).
//
//   node bench/web_latency.mjs --chromium PATH --url URL --modules DIR
//        [--runs N] [--mode settle|typing] [--pause MS] [--key-ms MS] [--trace 1] QUERY...
import { createRequire } from 'node:module';
import path from 'node:path';

const argv = process.argv.slice(2);
const KNOWN = ['chromium', 'url', 'modules', 'runs', 'mode', 'pause', 'key-ms', 'trace', 'trace-out'];
const opt = {};
const queries = [];
for (let i = 0; i < argv.length; i++) {
  if (!argv[i].startsWith('--')) { queries.push(argv[i]); continue; }
  const k = argv[i].slice(2);
  if (!KNOWN.includes(k) || i + 1 >= argv.length) throw new Error('web_latency: bad option ' + argv[i]);
  opt[k] = argv[++i];
}
const mode = opt.mode || 'settle';
if (!['settle', 'typing'].includes(mode)) throw new Error('web_latency: --mode settle|typing');
const runs = Number(opt.runs || 3), pause = Number(opt.pause || 0), keyMs = Number(opt['key-ms'] || 90);
const tracing = Boolean(Number(opt.trace || 0));
const require = createRequire(path.join(opt.modules, 'x.js'));
const puppeteer = require('puppeteer-core');

const browser = await puppeteer.launch({ executablePath: opt.chromium, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
const page = await browser.newPage();
await page.setViewport({ width: 1280, height: 820 });
await page.goto(opt.url, { waitUntil: 'networkidle0' });

// The recorder, in the page: every keydown, and every change of the result
// list with its frames and its Element Timing paint.
await page.evaluate(() => {
  const r = document.getElementById('results');
  const B = window.__bench = { keys: [], answers: [], paints: new Map(), n: 0, check: null };
  document.addEventListener('keydown', (e) => { B.keys.push(e.timeStamp); }, { capture: true });
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) B.paints.set(e.identifier, e.renderTime || e.loadTime);
    if (B.check) B.check();
  }).observe({ type: 'element', buffered: true });
  new MutationObserver(() => {
    const a = { for: r.dataset.for || '', dom: performance.now(), id: 'a' + (++B.n) };
    // marked before this frame renders, so Chromium reports its first paint
    const s = r.querySelector('.summary, .hint, .error');
    if (s) s.setAttribute('elementtiming', a.id);
    B.answers.push(a);
    requestAnimationFrame((t1) => { a.commit = t1; requestAnimationFrame((t2) => {
      a.painted = t2;
      if (B.check) B.check();
    }); });
  }).observe(r, { attributes: true, attributeFilter: ['data-for'], childList: true });
});

// Resolves with the timings of the key just pressed once the page has
// painted the answer for `full` (no polling: the page's own callbacks check).
const measure = (full) => page.evaluate((full) => new Promise((resolve) => {
  const B = window.__bench;
  const done = () => {
    const a = B.answers.findLast((x) => new URLSearchParams(x.for).get('q') === full);
    if (!a || !a.painted) return false;
    const paint = B.paints.get(a.id);
    if (paint === undefined && performance.now() - a.painted < 500) return false;
    const t0 = B.keys[B.keys.length - 1];
    const res = performance.getEntriesByType('resource').filter((e) => {
      const u = new URL(e.name);
      return u.searchParams.get('frag') && u.searchParams.get('q') === full;
    });
    const f = res[res.length - 1];
    const m = /· (\d+) ms/.exec(document.querySelector('#results .summary')?.textContent || '');
    B.check = null;
    resolve({ paint: paint === undefined ? NaN : paint - t0, commit: a.commit - t0, painted: a.painted - t0,
              send: f ? f.startTime - t0 : NaN, fetch: f ? f.responseEnd - f.startTime : NaN,
              dom: f ? a.dom - f.responseEnd : NaN, search: m ? Number(m[1]) : NaN,
              gap: t0 - B.keys[B.keys.length - 2], t0, end: paint === undefined ? a.painted : paint });
    return true;
  };
  // checked on each frame and paint entry; a missing Element Timing entry
  // gives up 500 ms after the frame
  B.check = done;
  const tick = () => { if (B.check && !done()) setTimeout(tick, 100); };
  tick();
}), full);

const answered = (q) => page.waitForFunction((v) => {
  const r = document.getElementById('results');
  return r && new URLSearchParams(r.dataset.for || '').get('q') === v;
}, { timeout: 20000 }, q);

// keys of printable ASCII only: each is a keydown, the event t0 is read from
async function press(ch) {
  if (!/^[\x20-\x7e]$/.test(ch)) throw new Error('web_latency: queries of printable ASCII only');
  await page.keyboard.press(ch);
}
const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

async function one(q) {
  await page.$eval('#q', (el) => { el.value = ''; el.focus(); });
  await page.evaluate(() => { performance.clearResourceTimings(); window.__bench.answers = []; });
  const chars = [...q];
  if (mode === 'settle') {
    const head = chars.slice(0, -1).join('');
    await page.type('#q', head);
    await answered(head);
    if (pause) await sleep(pause);
    await press(chars[chars.length - 1]);
  } else {
    // keys on a fixed cadence from the first one, whatever the page does
    const start = Date.now();
    for (let i = 0; i < chars.length; i++) {
      const wait = start + i * keyMs - Date.now();
      if (wait > 0) await sleep(wait);
      await press(chars[i]);
    }
  }
  return measure(q);
}

// Renderer main-thread self time per kind between t0 and the paint of each
// timed key, from a devtools.timeline trace. Trace times are mapped onto
// the page clock through a user timing mark made at a known performance.now().
const KINDS = [
  ['parse', /^(ParseHTML|ParseAuthorStyleSheet)$/],
  ['style', /^(UpdateLayoutTree|RecalculateStyles|ScheduleStyleRecalculation|InvalidateLayout)$/],
  ['layout', /^(Layout|UpdateLayout|IntersectionObserverController::computeIntersections)$/],
  ['paint', /^(PrePaint|Paint|PaintImage|Layerize|UpdateLayer|UpdateLayerTree|Commit|CompositeLayers|PaintArtifactCompositor.*|LocalFrameView::RunPaintLifecyclePhase)$/],
  ['scripting', /^(FunctionCall|EvaluateScript|EventDispatch|TimerFire|FireAnimationFrame|RunMicrotasks|FireIdleCallback|XHRReadyStateChange|v8\..*|V8\..*|MajorGC|MinorGC|BlinkGC\..*|ResourceFetcher::requestResource|HTMLDocumentParser::.*)$/],
];
function kindOf(name) {
  for (const [k, re] of KINDS) if (re.test(name)) return k;
  return 'other';
}
function mainThreadTimes(events, windows, syncNow) {
  const mark = events.find((e) => e.name === 'bench-sync' && e.cat.includes('blink.user_timing'));
  if (!mark) throw new Error('web_latency: the trace lacks the sync mark');
  // the mark's own thread may not be the main one: take the renderer's CrRendererMain
  const main = events.find((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === mark.pid &&
                                  e.args.name === 'CrRendererMain');
  const tid = main ? main.tid : mark.tid;
  const offset = mark.ts / 1000 - syncNow;   // trace ms = page ms + offset
  const xs = events.filter((e) => e.pid === mark.pid && e.tid === tid && e.ph === 'X' && e.dur !== undefined)
    .sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  // self time: each event's duration less its children's, on the wall
  // clock (dur) and on the thread's CPU clock (tdur: what a loaded machine
  // does not inflate)
  const stack = [], self = [];
  for (const e of xs) {
    while (stack.length && stack[stack.length - 1].ts + stack[stack.length - 1].dur <= e.ts) stack.pop();
    const cpu = e.tdur !== undefined ? e.tdur : e.dur;
    const rec = { ts: e.ts, dur: e.dur, self: e.dur, cpu, kind: kindOf(e.name) };
    const up = stack[stack.length - 1];
    if (up) { up.self -= Math.min(e.dur, up.ts + up.dur - e.ts); up.cpu -= cpu; }
    stack.push(rec);
    self.push(rec);
  }
  return windows.map(([from, to]) => {
    const a = (from + offset) * 1000, b = (to + offset) * 1000;
    const sum = { wall: 0, cpu: 0, scripting: 0, parse: 0, style: 0, layout: 0, paint: 0, other: 0 };
    for (const s of self) {
      if (s.ts < a || s.ts >= b) continue;
      const cpu = Math.max(0, s.cpu) / 1000;
      sum[s.kind] += cpu;
      sum.cpu += cpu;
      sum.wall += Math.max(0, s.self) / 1000;
    }
    return sum;
  });
}

const got = [];
for (let run = 0; run < runs; run++) {
  const counted = run > 0 || runs === 1;
  let syncNow = 0;
  if (counted && tracing && !got.length) {
    await page.tracing.start({ categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline',
      'blink.user_timing', 'v8.execute'] });
    syncNow = await page.evaluate(() => { const t = performance.now(); performance.mark('bench-sync'); return t; });
    got.syncNow = syncNow;
  }
  for (const q of queries) {
    const t = await one(q);
    if (counted) got.push(t);
  }
}
let main = null;
if (tracing) {
  const buf = await page.tracing.stop();
  if (opt['trace-out']) (await import('node:fs')).writeFileSync(opt['trace-out'], Buffer.from(buf));
  const events = JSON.parse(Buffer.from(buf).toString()).traceEvents;
  main = mainThreadTimes(events, got.map((t) => [t.t0, t.end]), got.syncNow);
}
await browser.close();

const pct = (xs, p) => {
  const s = xs.filter((x) => typeof x === 'number' && !Number.isNaN(x)).sort((a, b) => a - b);
  if (!s.length) return null;
  return Math.round(s[Math.min(s.length - 1, Math.floor(p * s.length))] * 10) / 10;
};
const stat = (xs) => ({ p50: pct(xs, 0.5), p95: pct(xs, 0.95) });
const out = { mode, n: got.length };
for (const k of ['paint', 'commit', 'painted', 'send', 'fetch', 'dom', 'search', 'gap'])
  out[k + '_ms'] = stat(got.map((t) => t[k]));
if (main) {
  out.main_ms = {};
  for (const k of ['wall', 'cpu', 'scripting', 'parse', 'style', 'layout', 'paint', 'other'])
    out.main_ms[k] = stat(main.map((m) => m[k]));
}
console.log(JSON.stringify(out));
