// trove serve — the page's only script. Everything works without it (the
// server renders every page); with it, results follow the typing, and the
// keyboard moves: / focuses the search, arrows move, Enter opens, Esc goes back.
'use strict';
(function () {
  document.documentElement.classList.add('js');
  function searchPage() {
    const form = document.querySelector('form.search');
    const q = document.getElementById('q');
    const results = document.getElementById('results');
    if (!form || !q || !results) return;
    // Results follow every key with no debounce: a search is sent at once
    // unless one is on its way; then only the newest form state waits, sent
    // as soon as that answer comes back (so the server, which answers one
    // request at a time, never queues searches nobody will see, and answers
    // arrive in the order they were asked: an older list never replaces a
    // newer one). `inflight`/`pending`: query strings, null when none.
    let inflight = null, pending = null, selected = -1;

    function params() {
      const p = new URLSearchParams();
      for (const [k, v] of new FormData(form)) {
        if (v === '' || (k === 'mode' && v === 'search')) continue;
        p.append(k, v);
      }
      return p.toString();
    }
    function items() { return Array.from(results.querySelectorAll('.result')); }
    function select(i) {
      const list = items();
      list.forEach((el) => el.classList.remove('selected'));
      selected = list.length ? Math.max(-1, Math.min(i, list.length - 1)) : -1;
      if (selected >= 0) {
        const el = list[selected];
        el.classList.add('selected');
        el.querySelector('.title a').focus({ preventScroll: true });
        el.scrollIntoView({ block: 'nearest' });
      } else {
        q.focus();
      }
    }
    // The URL and the title name the newest search asked. They change
    // while the server works: history.replaceState holds Chromium's main
    // thread for milliseconds on a busy machine, which between an answer
    // and its drawing would delay the results.
    function name(qs) {
      history.replaceState(null, '', qs ? '/?' + qs : '/');
      const asked = new URLSearchParams(qs).get('q');
      document.title = (asked ? asked + ' — ' : '') + 'trove';
    }
    // The list (the server's own escaped HTML) for the search `qs`.
    function show(qs, html) {
      results.innerHTML = html;
      results.dataset.for = qs;   // which search the list answers (tests wait on it)
      selected = -1;
      results.dispatchEvent(new CustomEvent('trove:results', { bubbles: true }));
    }
    async function send(qs) {
      inflight = qs;
      let html = null;
      try {
        const answer = fetch('/?' + (qs ? qs + '&' : '') + 'frag=1');
        name(qs);
        html = await (await answer).text();
      } catch (e) {
        html = null;
      }
      inflight = null;
      const next = pending;
      pending = null;
      if (next !== null) send(next);   // asked before this list is drawn
      if (html !== null) show(qs, html);
      else if (next === null) results.textContent = 'The server did not answer.';
    }
    function run() {
      const qs = params();
      if (inflight === null) send(qs);
      else pending = qs === inflight ? null : qs;
    }

    q.addEventListener('input', run);
    form.addEventListener('change', (e) => { if (e.target !== q) run(); });
    form.addEventListener('submit', (e) => { e.preventDefault(); run(); });
    document.addEventListener('keydown', (e) => {
      if (e.key === 'ArrowDown' && !e.altKey) { e.preventDefault(); select(selected + 1); }
      else if (e.key === 'ArrowUp' && !e.altKey && selected >= 0) { e.preventDefault(); select(selected - 1); }
      else if (e.key === 'Escape') {
        if (selected >= 0) select(-1);
        else if (document.activeElement === q && q.value) { q.value = ''; run(); }
      }
    });
  }

  // The note's neighbourhood in the link graph, from /api/graph: notes
  // linking here on the left, notes it links to on the right, all links.
  const SVG = 'http://www.w3.org/2000/svg';
  function el(name, attrs, parent) {
    const e = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (parent) parent.appendChild(e);
    return e;
  }
  function label(s) { return s.length > 22 ? s.slice(0, 21) + '…' : s; }
  async function drawGraph(box) {
    let g;
    try {
      const r = await fetch('/api/graph?ref=' + encodeURIComponent(box.dataset.ref));
      if (!r.ok) return;
      g = await r.json();
    } catch (e) { return; }
    const MAX = 8, W = 640, rows = Math.max(1, Math.min(MAX, Math.max(g.back.length, g.out.length)));
    const H = Math.max(120, rows * 34 + 30);
    const svg = el('svg', { viewBox: `0 0 ${W} ${H}`, role: 'group',
                            'aria-label': `${g.back.length} notes link here, this note links to ${g.out.length}` });
    const cx = W / 2, cy = H / 2;
    function side(list, x, anchor) {
      const shown = list.slice(0, MAX);
      shown.forEach((n, i) => {
        const y = shown.length === 1 ? cy : 20 + i * (H - 40) / (shown.length - 1);
        el('line', { x1: cx, y1: cy, x2: x, y2: y, class: 'edge' }, svg);
        const a = el('a', { href: '/note?ref=' + encodeURIComponent('#' + n.docid) }, svg);
        el('title', {}, a).textContent = n.title + ' — ' + n.path;
        el('circle', { cx: x, cy: y, r: 6, class: 'node' }, a);
        const t = el('text', { x: anchor === 'end' ? x - 12 : x + 12, y: y + 4, 'text-anchor': anchor }, a);
        t.textContent = label(n.title);
      });
      if (list.length > MAX) {
        const t = el('text', { x, y: H - 2, 'text-anchor': 'middle', class: 'more' }, svg);
        t.textContent = `and ${list.length - MAX} more`;
      }
    }
    side(g.back, 200, 'end');
    side(g.out, W - 200, 'start');
    el('circle', { cx, cy, r: 9, class: 'node self' }, svg);
    const t = el('text', { x: cx, y: cy - 16, 'text-anchor': 'middle', class: 'self' }, svg);
    t.textContent = label(g.note.title);
    box.appendChild(svg);
    if (!g.back.length && !g.out.length) box.textContent = 'No links in or out.';
  }

  function notePage() {
    const graph = document.getElementById('graph');
    if (graph) drawGraph(graph);
    const hit = document.getElementById('hit');
    if (hit) hit.scrollIntoView({ block: 'center' });
    const back = document.querySelector('[data-back]');
    const fromSearch = document.referrer && new URL(document.referrer).origin === location.origin;
    if (back && fromSearch && history.length > 1) {
      back.addEventListener('click', (e) => { e.preventDefault(); history.back(); });
    }
    document.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') { if (fromSearch && history.length > 1) history.back(); else location.href = '/'; }
    });
  }

  document.addEventListener('keydown', (e) => {
    const t = e.target;
    const typing = t && (t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.tagName === 'TEXTAREA');
    if (e.key === '/' && !typing) {
      const q = document.getElementById('q');
      e.preventDefault();
      if (q) { q.focus(); q.select(); } else location.href = '/';
    }
  });

  const page = document.body.dataset.page;
  if (page === 'search') searchPage();
  else if (page === 'note') notePage();
})();
