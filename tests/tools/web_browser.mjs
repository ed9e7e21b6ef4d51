// Drive `trove serve` in headless Chromium (puppeteer-core, Debian's
// chromium): the steps of tests/e2e/test_web.py::test_in_chromium. Prints
// progress, then one JSON line: {ok, failures, dialogs, console_errors,
// outside_requests, axe_violations, shots}.
//
//   node web_browser.mjs --chromium PATH --url http://127.0.0.1:PORT/ --shots DIR
//        --modules PUPPETEER_NODE_MODULES --axe AXE_NODE_MODULES [--flow dates]
//
// --flow dates: the date and frontmatter filters on fixtures/meta
// (test_web.py::test_dates_and_where_in_chromium) instead of the sample
// vault's flow.
import { createRequire } from 'node:module';
import path from 'node:path';

const arg = (name) => { const i = process.argv.indexOf('--' + name); return i > 0 ? process.argv[i + 1] : null; };
const base = arg('url'), shots = arg('shots'), modules = arg('modules');
const require = createRequire(path.join(modules, 'x.js'));
const puppeteer = require('puppeteer-core');
const axePath = path.join(arg('axe'), 'axe-core', 'axe.min.js');

const report = { ok: true, failures: [], dialogs: [], console_errors: [], outside_requests: [],
                 axe_violations: {}, shots: [] };
const fail = (what) => { report.ok = false; report.failures.push(what); console.log('FAIL ' + what); };
const check = (cond, what) => { if (!cond) fail(what); else console.log('ok   ' + what); };

const VIEWS = { laptop: { width: 1280, height: 820 }, phone: { width: 390, height: 844, isMobile: true, hasTouch: true, deviceScaleFactor: 2 } };

async function newPage(browser, { view = 'laptop', scheme = 'light', js = true, bypassCSP = false } = {}) {
  const page = await browser.newPage();
  await page.setViewport(VIEWS[view]);
  await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: scheme }]);
  await page.setJavaScriptEnabled(js);
  if (bypassCSP) await page.setBypassCSP(true);
  await page.setRequestInterception(true);
  page.on('request', (req) => {
    const u = new URL(req.url());
    if (u.protocol === 'data:' || (u.hostname === '127.0.0.1' && u.protocol === 'http:')) return req.continue();
    report.outside_requests.push(req.url());
    return req.abort();
  });
  page.on('dialog', async (d) => { report.dialogs.push(d.message()); await d.dismiss(); });
  page.on('console', (m) => { if (m.type() === 'error') report.console_errors.push(m.text()); });
  page.on('pageerror', (e) => report.console_errors.push(String(e)));
  return page;
}

async function shot(page, name) {
  const file = path.join(shots, name + '.png');
  await page.screenshot({ path: file, fullPage: false });
  report.shots.push(file);
}

const titles = (page) => page.$$eval('.result .title a', (as) => as.map((a) => a.textContent));

// The result list answers the search whose parameter `key` is `value`.
const answered = (page, key, value) => page.waitForFunction((k, v) => {
  const r = document.getElementById('results');
  return r && r.dataset.for !== undefined && new URLSearchParams(r.dataset.for).get(k) === v;
}, { timeout: 10000 }, key, value);

async function typeQuery(page, text) {
  await page.$eval('#q', (el) => { el.value = ''; el.focus(); });
  const got = answered(page, 'q', text);
  await page.type('#q', text);
  await got;
}

async function flow(browser) {
  const page = await newPage(browser);
  await page.goto(base, { waitUntil: 'networkidle0' });
  await shot(page, 'home-laptop-light');

  // 1. type a query, see results for a sample-vault note
  await typeQuery(page, 'pointers');
  let t = await titles(page);
  check(t[0] === 'Pointers in C and C++', 'typing "pointers" shows the C pointers note first: ' + t.join(' | '));
  check(page.url().includes('?q=pointers'), 'the search is in the URL: ' + page.url());
  await shot(page, 'search-laptop-light');

  // per-channel breakdown on demand
  await page.click('.result .score summary');
  check(await page.$eval('.result .score', (d) => d.open && d.textContent.includes('bm25')), 'the score opens to its channels');

  // 2. filter by tag (the filter field, then Tab: the change event)
  await typeQuery(page, 'bread');
  await page.click('details.filters summary');
  const changed = answered(page, 'tags', 'baking');
  await page.type('input[name=tags]', 'baking');
  await page.keyboard.press('Tab');
  await changed;
  const tagged = await page.$$eval('.result', (rs) => rs.map((r) => Array.from(r.querySelectorAll('.tag')).map((a) => a.textContent)));
  check(tagged.length > 0 && tagged.every((tags) => tags.includes('#baking')), 'tag filter: every result has #baking: ' + JSON.stringify(tagged));
  await shot(page, 'filter-laptop-light');

  // 3. keyboard: / focuses, arrows move, Enter opens, the passage is highlighted
  await page.goto(base, { waitUntil: 'networkidle0' });
  await page.click('main h1, body');
  await page.keyboard.press('/');
  check(await page.evaluate(() => document.activeElement.id === 'q'), '/ focuses the search box');
  const got = answered(page, 'q', 'fermentation');
  await page.keyboard.type('fermentation');
  await got;
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  check(await page.evaluate(() => document.querySelector('.result.selected')?.id === 'r2'), 'two arrows down select the second result');
  await page.keyboard.press('ArrowUp');
  const first = await page.$eval('#r1 .title a', (a) => a.textContent);
  await Promise.all([page.waitForNavigation({ waitUntil: 'networkidle0' }), page.keyboard.press('Enter')]);
  check(await page.$eval('h1', (h) => h.textContent) === first, 'Enter opens the selected note: ' + first);
  const hit = await page.evaluate(() => {
    const m = document.getElementById('hit');
    if (!m) return null;
    const r = m.getBoundingClientRect();
    return { visible: r.top >= 0 && r.top < innerHeight, bg: getComputedStyle(m).backgroundColor };
  });
  check(hit && hit.visible && hit.bg !== 'rgba(0, 0, 0, 0)', 'the hit passage is highlighted and in view: ' + JSON.stringify(hit));
  await shot(page, 'note-laptop-light');
  await Promise.all([page.waitForNavigation(), page.keyboard.press('Escape')]);
  check(new URL(page.url()).searchParams.get('q') === 'fermentation', 'Esc goes back to the results: ' + page.url());

  // 4. follow a wikilink
  await page.goto(base + 'note?ref=' + encodeURIComponent('vault/Home.md'), { waitUntil: 'networkidle0' });
  const link = await page.$$eval('a.note-link', (as) => as.map((a) => a.textContent));
  check(link.includes('c-pointers'), 'Home has a wikilink to c-pointers');
  const [a] = await page.$$('xpath/.//a[@class="note-link" and text()="c-pointers"]');
  await Promise.all([page.waitForNavigation({ waitUntil: 'networkidle0' }), a.click()]);
  check(await page.$eval('h1', (h) => h.textContent) === 'Pointers in C and C++', 'the wikilink opens its note in the page');
  // its neighbourhood: an SVG drawn from /api/graph, its nodes clickable
  await page.waitForSelector('#graph svg a', { timeout: 10000 });
  const nodes = await page.$$eval('#graph svg a text', (ts) => ts.map((t) => t.textContent));
  check(nodes.includes('Home'), 'the link graph shows Home linking here: ' + nodes.join(' | '));
  await page.$eval('#graph', (g) => g.scrollIntoView());
  await shot(page, 'graph-laptop-light');
  const [home] = await page.$$('xpath/.//*[@id="graph"]//*[local-name()="a"][.//*[local-name()="text" and text()="Home"]]');
  await Promise.all([page.waitForNavigation({ waitUntil: 'networkidle0' }), home.click()]);
  check(await page.$eval('h1', (h) => h.textContent) === 'Home', 'a graph node opens its note');

  // 5. a Chinese query
  await page.goto(base, { waitUntil: 'networkidle0' });
  await typeQuery(page, '斐波那契');
  const paths = await page.$$eval('.result .path', (ps) => ps.map((p) => p.textContent));
  check(paths.some((p) => p.includes('斐波那契数列.md')), 'a Chinese query finds the Chinese note: ' + paths.join(' | '));
  await shot(page, 'chinese-laptop-light');

  // 6. status, and the rollback that asks first
  await Promise.all([page.waitForNavigation({ waitUntil: 'networkidle0' }), page.click('nav a[href="/status"]')]);
  check(await page.$eval('h1', (h) => h.textContent) === 'Status', 'the status page opens');
  check((await page.$eval('main', (m) => m.textContent)).includes('vault'), 'status lists the collection');
  await shot(page, 'status-laptop-light');

  // 7. the hostile note: nothing runs, nothing loads
  await page.goto(base + 'note?ref=' + encodeURIComponent('vault/inbox/hostile.md'), { waitUntil: 'networkidle0' });
  for (const el of await page.$$('.md .blocked-link, .md .image')) await el.click();
  check(await page.evaluate(() => document.querySelectorAll('.md script, .md img, .md iframe, .md [onerror], .md [onclick]').length === 0), 'the hostile note has no live elements');
  await shot(page, 'hostile-laptop-light');
  await page.close();

  // 8. JavaScript off: the search URL and the form still work
  const nojs = await newPage(browser, { js: false });
  await nojs.goto(base + '?q=pointers', { waitUntil: 'networkidle0' });
  t = await titles(nojs);
  check(t[0] === 'Pointers in C and C++', 'with JavaScript off a search URL renders its results');
  await nojs.$eval('#q', (el) => { el.value = ''; });
  await nojs.type('#q', 'ramen');
  await Promise.all([nojs.waitForNavigation(), nojs.keyboard.press('Enter')]);
  t = await titles(nojs);
  check(t.some((x) => /ramen/i.test(x)), 'with JavaScript off the form submits: ' + t.join(' | '));
  await nojs.close();
}

async function looks(browser) {
  for (const view of ['laptop', 'phone']) {
    for (const scheme of ['light', 'dark']) {
      if (view === 'laptop' && scheme === 'light') continue;
      const page = await newPage(browser, { view, scheme });
      await page.goto(base + '?q=sourdough', { waitUntil: 'networkidle0' });
      await shot(page, `search-${view}-${scheme}`);
      await page.click('.result .title a');
      await page.waitForSelector('article.note');
      await new Promise((r) => setTimeout(r, 100));
      await shot(page, `note-${view}-${scheme}`);
      await page.goto(base + 'status', { waitUntil: 'networkidle0' });
      await shot(page, `status-${view}-${scheme}`);
      await page.close();
    }
  }
}

// Result paths and dates as the page shows them.
const shown = (page) => page.$$eval('.result', (rs) => rs.map((r) => ({
  path: r.querySelector('.path').textContent.replace(/^m\//, '').replace(/:\d+$/, ''),
  date: (r.querySelector('.date time') || {}).textContent || null })));

async function dates(browser) {
  const page = await newPage(browser);
  await page.goto(base + '?q=crane', { waitUntil: 'networkidle0' });
  let r = await shown(page);
  check(r.length >= 8 && r.every((x) => /^\d{4}-\d{2}-\d{2}$/.test(x.date)), 'every result shows its date: ' + JSON.stringify(r));
  // since: the field, then Tab (the change event)
  await page.click('details.filters summary');
  let changed = answered(page, 'since', '2025-01-01');
  await page.type('input[name=since]', '2025-01-01');
  await page.keyboard.press('Tab');
  await changed;
  r = await shown(page);
  check(r.length > 0 && r.every((x) => x.date >= '2025-01-01'), 'since 2025-01-01: every date from then on: ' + JSON.stringify(r));
  // where, with the date filter still on
  changed = answered(page, 'where', 'status=done');
  await page.type('input[name=where]', 'status=done');
  await page.keyboard.press('Tab');
  await changed;
  r = await shown(page);
  const paths = r.map((x) => x.path).sort();
  check(JSON.stringify(paths) === JSON.stringify(['meetings/2025-06-02 Planning.md', 'projects/alpha.md', 'projects/gamma.md']),
        'where status=done since 2025: ' + JSON.stringify(paths));
  const u = new URL(page.url());
  check(u.searchParams.get('since') === '2025-01-01' && u.searchParams.get('where') === 'status=done',
        'the filters are in the URL: ' + page.url());
  await shot(page, 'dates-laptop-light');
  // the URL opened with JavaScript off renders the same results, the form filled
  const nojs = await newPage(browser, { js: false });
  await nojs.goto(page.url(), { waitUntil: 'networkidle0' });
  const again = (await shown(nojs)).map((x) => x.path).sort();
  check(JSON.stringify(again) === JSON.stringify(paths), 'with JavaScript off the URL gives the same results: ' + JSON.stringify(again));
  check(await nojs.$eval('input[name=where]', (el) => el.value) === 'status=done', 'the form shows the where condition');
  await shot(nojs, 'dates-nojs-laptop-light');
  await nojs.close();
  // a date that is none: the sentence where the results go
  const bad = answered(page, 'until', 'someday');
  await page.type('input[name=until]', 'someday');
  await page.keyboard.press('Tab');
  await bad;
  check(/not a date/.test(await page.$eval('#results', (el) => el.textContent)), 'a bad date is said on the page');
  await shot(page, 'dates-error-laptop-light');
  await page.close();
  for (const [view, scheme] of [['phone', 'dark'], ['laptop', 'dark']]) {
    const p = await newPage(browser, { view, scheme });
    await p.goto(base + '?q=crane&since=2024-01-01&where=status%3Ddone&recent=1', { waitUntil: 'networkidle0' });
    await shot(p, `dates-${view}-${scheme}`);
    await p.close();
  }
}

async function axe(browser, only) {
  const pages = only ? { dates: only } : { search: '?q=pointers', note: 'note?ref=' + encodeURIComponent('vault/Home.md') + '&hl=55-300',
                  status: 'status', rollback: 'rollback?id=1', home: '' };
  for (const scheme of ['light', 'dark']) {
    for (const [name, rel] of Object.entries(pages)) {
      const page = await newPage(browser, { scheme, bypassCSP: true });
      await page.goto(base + rel, { waitUntil: 'networkidle0' });
      await page.addScriptTag({ path: axePath });
      const res = await page.evaluate(async () => await window.axe.run(document));
      const v = res.violations.map((x) => `${x.id}: ${x.help} (${x.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')})`);
      if (v.length) report.axe_violations[`${name}-${scheme}`] = v;
      console.log(`axe ${name}-${scheme}: ${v.length} violations`);
      await page.close();
    }
  }
}

const browser = await puppeteer.launch({
  executablePath: arg('chromium'), headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--metrics-recording-only', '--disable-default-apps'],
});
try {
  if (arg('flow') === 'dates') {
    await dates(browser);
    await axe(browser, '?q=crane&since=2024-01-01&where=status%3Ddone&recent=1');
  } else {
    await flow(browser);
    await looks(browser);
    await axe(browser);
  }
} catch (e) {
  fail('exception: ' + (e && e.stack || e));
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
