// keel memory report: the page's script. Embedded into the page by report_html.cpp.
//
// Reads the JSON document in the script element #keel-report-data (see report_html.hpp for its
// layout), and per device tab draws: the active-memory timeline per allocation (canvas,
// one pixel column at a time from a sweep over the trace), an overview strip to select a
// range, the recorded run and the analysis candidates as allocated/reserved lines, and the
// allocator state at a selected event (walking the trace from the final state). Everything
// from the snapshot is placed with textContent, never as HTML.
//
// For tests, the page reports on itself through attributes: html[data-rendered-ms] (time
// from navigation start until the first device's charts were drawn), and per device panel
// data-rendered-ms, data-elements, data-columns and data-reserved-below-allocated (pixel
// columns of any plotted series where reserved < allocated: always 0).
'use strict';
(function () {
  const ACT = ['alloc', 'free_requested', 'free_completed', 'segment_alloc', 'segment_free',
    'segment_map', 'segment_unmap', 'oom', 'snapshot', 'annotate'];
  const A_ALLOC = 0, A_FREE_REQ = 1, A_FREE = 2, A_SEG_ALLOC = 3, A_SEG_FREE = 4, A_SEG_MAP = 5,
    A_SEG_UNMAP = 6, A_OOM = 7;
  // Colours for call sites (muted, distinguishable) and for candidate lines.
  const SITE_COLORS = ['#4e79a7', '#59a14f', '#9c755f', '#f28e2b', '#76b7b2', '#af7aa1', '#edc948',
    '#e15759', '#86bcb6', '#8cd17d', '#b6992d', '#499894', '#d37295', '#a0cbe8', '#ffbe7d', '#79706e'];
  const LINE_COLORS = ['#2457d6', '#d9480f', '#2b8a3e', '#862e9c', '#c2255c', '#0b7285', '#e67700',
    '#5c7cfa', '#66a80f', '#a61e4d'];
  const RECORDED_COLOR = '#1c2430';
  const RECORDED_BAND = '#b4bdc8';  // the recording under the candidates' lines
  const FONT = '11px system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif';

  const root = document.documentElement;
  const data = JSON.parse(document.getElementById('keel-report-data').textContent);
  const tables = data.tables;
  const BASE = BigInt(data.base || '0');

  // --- formatting ---

  const UNITS = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  function fmtBytes(n) {
    const neg = n < 0;
    let v = Math.abs(n), u = 0;
    if (v < 1024) return (neg ? '-' : '') + Math.round(v) + ' bytes';
    while (v >= 1024 && u < UNITS.length - 1) { v /= 1024; u++; }
    return (neg ? '-' : '') + v.toFixed(2) + ' ' + UNITS[u];
  }
  function fmtBytesShort(n) {
    if (n === 0) return '0';
    let v = n, u = 0;
    while (v >= 1024 && u < UNITS.length - 1) { v /= 1024; u++; }
    const s = v >= 100 || Number.isInteger(v) ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
    return (s.includes('.') ? s.replace(/\.?0+$/, '') : s) + ' ' + (u === 0 ? 'B' : UNITS[u]);
  }
  function fmtCount(n) { return Math.round(n).toLocaleString('en-US'); }
  function fmtTime(us) {
    const a = Math.abs(us);
    if (us === 0) return '0';
    if (a < 1000) return us.toFixed(a < 10 && us % 1 ? 1 : 0) + ' \u00b5s';
    if (a < 1e6) return (us / 1e3).toFixed(a < 1e4 ? 2 : 1) + ' ms';
    return (us / 1e6).toFixed(a < 1e7 ? 3 : 2) + ' s';
  }
  function hexAddr(rel) {
    if (rel < 0) return '\u2013';
    return '0x' + (BASE + BigInt(rel)).toString(16);
  }

  // --- DOM helpers (text only) ---

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }

  // --- stacks ---

  const stackCache = new Map();
  const HIDDEN_FILE = /(^|\/)(ceval\.c|call\.c|methodobject\.c|pythonrun\.c|main\.c|abstract\.h|pycore_[a-z_]+\.h)$|core\/boxing|\/Register|\/Redispatch/;
  const HIDDEN_NAME = /^(_?PyEval_|_?PyObject_|_?PyFunction_|__libc_start|_start$)|unwind::unwind|CapturedTraceback|gather_with_cpp/;
  // The frames of a stack, innermost first, without interpreter and dispatcher internals.
  function framesOf(id) {
    let f = stackCache.get(id);
    if (f) return f;
    f = [];
    const ids = tables.stacks[id] || [];
    for (const k of ids) {
      const file = tables.strings[tables.frames[3 * k]];
      const line = tables.frames[3 * k + 1];
      const name = tables.strings[tables.frames[3 * k + 2]];
      if (HIDDEN_FILE.test(file) || HIDDEN_NAME.test(name)) continue;
      f.push({ file, line, name });
    }
    stackCache.set(id, f);
    return f;
  }
  function frameText(f) { return f.file + ':' + f.line + '  ' + f.name; }
  const isPython = f => /\.py$/.test(f.file);
  // The allocator's own frames at the top of every native stack.
  const ALLOCATOR_FRAME = /CachingAllocator|unwind::|CapturedTraceback|gather_with_cpp|StorageImpl|TensorImpl|_empty_|empty_generic|empty_cuda|empty_strided|create_out|set_output_raw|TensorIteratorBase::/;
  // The frames worth reading: the Python ones when there are any (as memory_viz users read
  // them), else the native ones below the allocator's.
  function readableFrames(id, native) {
    const f = framesOf(id);
    if (native) return f;
    const py = f.filter(isPython);
    if (py.length) return py;
    const k = f.findIndex(x => !ALLOCATOR_FRAME.test(x.name));
    return k < 0 ? f : f.slice(k);
  }
  function framesText(id, limit, native) {
    const all = framesOf(id);
    if (all.length === 0) return '(no stack recorded: allocated before recording began, or recorded without stacks)';
    const f = readableFrames(id, native);
    const lines = [];
    let prev = null, repeats = 0;
    for (const x of f) {
      const t = frameText(x);
      if (t === prev) { repeats++; continue; }
      if (repeats) lines.push('  \u2026 repeated ' + repeats + ' more times');
      repeats = 0;
      prev = t;
      lines.push(t);
      if (limit && lines.length >= limit) break;
    }
    if (repeats) lines.push('  \u2026 repeated ' + repeats + ' more times');
    if (f.length < all.length && !native) lines.push('(' + (all.length - f.length) + ' native frames not shown)');
    else if (limit && lines.length >= limit && f.length > limit) lines.push('\u2026 ' + (f.length - limit) + ' more frames');
    return lines.join('\n');
  }
  // Where a stack is attributed, by keel's call-site rules (callsites.hpp, computed by the
  // page's writer): the site "file:line:function", its module and its category.
  const siteCache = new Map();
  function siteOf(id) {
    let s = siteCache.get(id);
    if (s) return s;
    const a = tables.sites[id] || [0, 0, tables.categories.length - 1, 0];
    const site = tables.strings[a[0]], module = tables.strings[a[1]];
    const category = tables.categories[a[2]] || 'unknown';
    if (!(tables.stacks[id] || []).length) {
      s = { key: '', label: site, full: site, module, category };
    } else {
      // "path/file.py:373:forward" reads as "file.py:373 forward"; a native site (no line) as
      // its function: "BmmBackward0::apply (native)".
      const m = /^(.*):(-?\d+):(.*)$/.exec(site);
      let label = site;
      if (m && m[2] !== '0') label = m[1].split('/').pop() + ':' + m[2] + ' ' + m[3];
      else if (m) label = m[3].replace(/^(torch::autograd::generated::|at::_ops::|torch::autograd::)/, '') + ' (native)';
      s = { key: site, label: label.length > 90 ? label.slice(0, 88) + '\u2026' : label, full: site + '  \u00b7  ' + module, module, category };
    }
    siteCache.set(id, s);
    return s;
  }
  function hash(str) {
    let h = 2166136261;
    for (let i = 0; i < str.length; i++) { h ^= str.charCodeAt(i); h = Math.imul(h, 16777619); }
    return h >>> 0;
  }
  const NO_STACK_COLOR = '#b8c0ca';
  const CATEGORY_COLORS = { parameter: '#4e79a7', optimizer_state: '#f28e2b', activation: '#59a14f', gradient: '#e15759',
    autograd_detail: '#b07aa1', temporary: '#9c755f', input: '#76b7b2', kv_cache: '#edc948', unknown: '#bab0ac' };
  // A device's palette: the call sites holding the most bytes get distinct colours, in order;
  // the others one by hash. `weights` maps stack ids to bytes. `mode` colours by call site or
  // by category.
  function makePalette(weights) {
    const bySite = new Map(), byCategory = new Map();
    for (const [id, bytes] of weights) {
      const s = siteOf(id);
      if (s.key !== '') bySite.set(s.key, (bySite.get(s.key) || 0) + bytes);
      byCategory.set(s.category, (byCategory.get(s.category) || 0) + bytes);
    }
    const ranked = [...bySite.entries()].sort((a, b) => b[1] - a[1]);
    const map = new Map();
    ranked.slice(0, SITE_COLORS.length).forEach(([key], i) => map.set(key, SITE_COLORS[i]));
    return { mode: 'site', map, ranked, categories: [...byCategory.entries()].sort((a, b) => b[1] - a[1]) };
  }
  function siteColor(id, pal) {
    const s = siteOf(id);
    if (pal && pal.mode === 'category') return CATEGORY_COLORS[s.category] || CATEGORY_COLORS.unknown;
    if (s.key === '') return NO_STACK_COLOR;
    return (pal && pal.map.get(s.key)) || SITE_COLORS[hash(s.key) % SITE_COLORS.length];
  }
  function rgb(hex) { return [parseInt(hex.slice(1, 3), 16), parseInt(hex.slice(3, 5), 16), parseInt(hex.slice(5, 7), 16)]; }
  function packRGBA(r, g, b) { return (255 << 24 | b << 16 | g << 8 | r) >>> 0; }  // little-endian ImageData
  const colorCache = new Map();
  // [normal, lighter (live before the window), darker (top edge)] as packed pixels.
  function sitePixels(id, pal) {
    const hex = siteColor(id, pal);
    let c = colorCache.get(hex);
    if (c) return c;
    const [r, g, b] = rgb(hex);
    const mix = (x, t, w) => Math.round(x + (t - x) * w);
    c = [packRGBA(r, g, b), packRGBA(mix(r, 255, 0.45), mix(g, 255, 0.45), mix(b, 255, 0.45)),
      packRGBA(mix(r, 0, 0.28), mix(g, 0, 0.28), mix(b, 0, 0.28))];
    colorCache.set(hex, c);
    return c;
  }

  // --- scales and ticks ---

  function niceStep(span, count) {
    const raw = span / Math.max(1, count);
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * p;
  }
  function byteTicks(max, count) {
    if (max <= 0) return { max: 1, ticks: [0] };
    let unit = 1;
    while (max / unit >= 1024 && unit < 1024 ** 5) unit *= 1024;
    const step = niceStep(max / unit, count) * unit;
    const top = Math.ceil(max / step - 1e-9) * step;
    const ticks = [];
    for (let v = 0; v <= top + step / 2; v += step) ticks.push(v);
    return { max: top, ticks };
  }
  function valueTicks(lo, hi, count) {
    const step = niceStep(hi - lo, count);
    const ticks = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) ticks.push(v);
    return ticks;
  }

  // --- the device model: elements (allocations) and per-entry totals ---

  function buildModel(dev) {
    const tr = dev.trace, seg = dev.segments;
    const n = tr.act.length;
    const act = tr.act, addr = tr.addr, size = tr.size, stack = tr.stack;
    // Elements: one per allocation seen (in the window or live before it).
    const elSize = [], elStack = [], elStart = [], elEnd = [], elAddr = [], elFreeReq = [];
    const evElem = new Int32Array(n).fill(-1);
    const extraRemove = new Map();  // entry -> element also ended there (an alloc over a live address)
    const live = new Map();
    const initialFreed = [];
    let segDelta = 0;
    const resDelta = new Float64Array(n);
    function newElem(a, s, st, start, end) {
      elAddr.push(a); elSize.push(s); elStack.push(st); elStart.push(start); elEnd.push(end); elFreeReq.push(-1);
      return elSize.length - 1;
    }
    for (let i = 0; i < n; i++) {
      switch (act[i]) {
        case A_ALLOC: {
          const prev = live.get(addr[i]);
          if (prev !== undefined) { elEnd[prev] = i; extraRemove.set(i, prev); }
          const e = newElem(addr[i], size[i], stack[i], i, n);
          live.set(addr[i], e);
          evElem[i] = e;
          break;
        }
        case A_FREE_REQ: {
          const e = live.get(addr[i]);
          if (e !== undefined) elFreeReq[e] = i;
          break;
        }
        case A_FREE: {
          let e = live.get(addr[i]);
          if (e !== undefined) { live.delete(addr[i]); elEnd[e] = i; }
          else { e = newElem(addr[i], size[i], stack[i], -1, i); initialFreed.push(e); }
          evElem[i] = e;
          break;
        }
        case A_SEG_ALLOC: case A_SEG_MAP: resDelta[i] = size[i]; segDelta += size[i]; break;
        case A_SEG_FREE: case A_SEG_UNMAP: resDelta[i] = -size[i]; segDelta -= size[i]; break;
        default: break;
      }
    }
    // Blocks live at the end that the window never allocated: live throughout.
    const always = [];
    let finalReserved = 0;
    for (let s = 0; s < seg.addr.length; s++) {
      finalReserved += seg.size[s];
      for (let b = seg.first[s]; b < seg.first[s + 1]; b++) {
        if (seg.b_state[b] === 0 || live.has(seg.b_addr[b])) continue;
        const req = seg.b_req[b] || seg.b_size[b];
        always.push(newElem(seg.b_addr[b], req, seg.b_stack[b], -1, n));
      }
    }
    // Stacking order: live throughout at the bottom, then those freed in the window (the
    // last freed lowest), then the window's allocations in allocation order.
    initialFreed.sort((a, b) => elEnd[b] - elEnd[a]);
    const initial = always.concat(initialFreed);
    let initialTotal = 0;
    for (const e of initial) initialTotal += elSize[e];
    const tot = new Float64Array(n), res = new Float64Array(n);
    let t = initialTotal, r = finalReserved - segDelta;
    const startReserved = r;
    let peakIdx = -1, peak = initialTotal;
    for (let i = 0; i < n; i++) {
      const e = evElem[i];
      if (e >= 0) t += elStart[e] === i ? elSize[e] : -elSize[e];
      const x = extraRemove.get(i);
      if (x !== undefined) t -= elSize[x];
      r += resDelta[i];
      tot[i] = t; res[i] = r;
      if (t > peak) { peak = t; peakIdx = i; }
    }
    // The time axis is usable when times exist, never decrease and span something.
    let timeOk = !!tr.time && n > 1;
    if (timeOk) {
      for (let i = 1; i < n; i++) if (tr.time[i] < tr.time[i - 1]) { timeOk = false; break; }
      if (timeOk && tr.time[n - 1] <= tr.time[0]) timeOk = false;
    }
    const weights = new Map();
    for (let e = 0; e < elSize.length; e++) weights.set(elStack[e], (weights.get(elStack[e]) || 0) + elSize[e]);
    const palette = makePalette(weights);
    const colors = new Uint32Array(elSize.length), colorsTop = new Uint32Array(elSize.length);
    return {
      n, act, addr, size, stack, time: tr.time, timeOk, oomAt: tr.oom_at || [], oomFree: tr.oom_free || [],
      elSize: Float64Array.from(elSize), elStack: Int32Array.from(elStack), elStart: Int32Array.from(elStart),
      elEnd: Int32Array.from(elEnd), elAddr: Float64Array.from(elAddr), elFreeReq: Int32Array.from(elFreeReq),
      evElem, extraRemove, initial: Int32Array.from(initial), initialTotal, tot, res, startReserved,
      finalReserved, peakIdx, peak, colors, colorsTop, palette, streams: tr.stream,
    };
  }

  // The pixel colours of every allocation under the palette's current mode.
  function paint(M, pal) {
    for (let e = 0; e < M.elSize.length; e++) {
      const c = sitePixels(M.elStack[e], pal);
      M.colors[e] = M.elStart[e] < 0 ? c[1] : c[0];
      M.colorsTop[e] = c[2];
    }
  }

  // --- one device's view ---

  function DeviceView(dev, panel) {
    const id = dev.device;
    const M = dev.entries > 0 ? buildModel(dev) : null;
    // Colours by call site: the trace's allocations rank the sites, else the final blocks.
    const palette = M ? M.palette : (() => {
      const w = new Map(), sg = dev.segments;
      for (let b = 0; b < sg.b_addr.length; b++) if (sg.b_state[b]) w.set(sg.b_stack[b], (w.get(sg.b_stack[b]) || 0) + (sg.b_req[b] || sg.b_size[b]));
      return makePalette(w);
    })();
    if (M) paint(M, palette);
    // The colour key: the largest call sites, or the categories.
    function drawColorKey() {
      const box = panel.querySelector('.color-key');
      if (!box) return;
      clear(box);
      const item = (color, text, title) => {
        const i = el('span', 'item'); const sw = el('i', 'sw'); sw.style.background = color; i.appendChild(sw);
        const t = el('span', null, text); if (title) t.title = title; i.appendChild(t); box.appendChild(i);
      };
      if (palette.mode === 'category') {
        for (const [c, bytes] of palette.categories) item(CATEGORY_COLORS[c] || CATEGORY_COLORS.unknown, c.replace('_', ' ') + ' ' + fmtBytesShort(bytes));
      } else {
        for (const [key] of palette.ranked.slice(0, 10)) {
          const id = [...siteCache.entries()].find(([, v]) => v.key === key)[0];
          const s = siteOf(id);
          item(siteColor(id, palette), s.label, s.full);
        }
        if (palette.ranked.length > 10) box.appendChild(el('span', 'item muted', '+ ' + (palette.ranked.length - 10) + ' more call sites'));
        item(NO_STACK_COLOR, 'no frames recorded');
      }
      box.appendChild(el('span', 'item muted', M ? 'lighter: live before the window' : ''));
    }
    function setColorMode(mode) {
      palette.mode = mode;
      if (M) { paint(M, palette); drawActive(); }
      drawState();
      drawColorKey();
    }
    const an = dev.analysis;
    // A device that ran out of memory opens at its first OOM; the others at their last entry.
    const view = { axis: M && M.timeOk ? 'time' : 'entry', x0: 0, x1: 1, mode: 0,
      selected: M ? (M.oomAt.length ? M.oomAt[0] : M.n - 1) : -1 };
    const q = sel => panel.querySelector(sel);
    const active = M ? q('[data-chart=active]') : null;
    const lines = M ? q('[data-chart=lines]') : null;
    const overview = M ? q('[data-chart=overview]') : null;
    let lastActive = null;   // per-column data of the last active-chart draw
    let lastLines = null;
    let belowCount = 0;

    // x of entry i on the current axis (an entry spans [x(i), x(i+1)) on the entry axis).
    function xOf(i) {
      if (view.axis === 'time') return M.time[Math.max(0, Math.min(M.n - 1, i))];
      return i;
    }
    function fullDomain() {
      if (view.axis === 'time') {
        const span = M.time[M.n - 1] - M.time[0];
        return [M.time[0], M.time[M.n - 1] + Math.max(1, span * 0.002)];
      }
      return [0, M.n];
    }
    function resetView() { [view.x0, view.x1] = fullDomain(); }
    // First entry whose x is >= v.
    function lowerBound(v) {
      if (view.axis === 'entry') return Math.max(0, Math.min(M.n, Math.ceil(v)));
      let lo = 0, hi = M.n;
      while (lo < hi) { const mid = (lo + hi) >> 1; if (M.time[mid] < v) lo = mid + 1; else hi = mid; }
      return lo;
    }
    function fmtX(v) { return view.axis === 'time' ? fmtTime(v) : fmtCount(v); }
    function entryText(i) {
      if (i < 0) return 'before the first entry';
      return 'entry ' + fmtCount(i) + (M.time ? ' (t = ' + fmtTime(M.time[i]) + ')' : '');
    }

    // Canvas set-up: size the backing store to the CSS box times the pixel ratio.
    function prepare(container, cssHeight) {
      const canvas = container.querySelector('canvas');
      const dpr = window.devicePixelRatio || 1;
      const w = Math.max(320, container.clientWidth);
      canvas.style.height = cssHeight + 'px';
      canvas.width = Math.round(w * dpr);
      canvas.height = Math.round(cssHeight * dpr);
      const ctx = canvas.getContext('2d');
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      return { canvas, ctx, dpr, w, h: cssHeight };
    }
    const PAD = { left: 66, right: 14, top: 10, bottom: 24 };

    function drawXAxis(ctx, w, h, x0, x1) {
      const pw = w - PAD.left - PAD.right;
      ctx.font = FONT; ctx.fillStyle = '#6b7785'; ctx.textAlign = 'center'; ctx.textBaseline = 'top';
      ctx.strokeStyle = '#cfd5dc'; ctx.lineWidth = 1;
      ctx.beginPath(); ctx.moveTo(PAD.left, h - PAD.bottom + 0.5); ctx.lineTo(w - PAD.right, h - PAD.bottom + 0.5); ctx.stroke();
      for (const v of valueTicks(x0, x1, Math.max(2, Math.floor(pw / 110)))) {
        const px = PAD.left + (v - x0) / (x1 - x0) * pw;
        ctx.beginPath(); ctx.moveTo(Math.round(px) + 0.5, h - PAD.bottom); ctx.lineTo(Math.round(px) + 0.5, h - PAD.bottom + 4); ctx.stroke();
        ctx.fillText(fmtX(v), px, h - PAD.bottom + 6);
      }
    }
    function drawYAxis(ctx, w, h, yt) {
      const ph = h - PAD.top - PAD.bottom;
      ctx.font = FONT; ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
      for (const v of yt.ticks) {
        const py = Math.round(PAD.top + ph - v / yt.max * ph) + 0.5;
        ctx.strokeStyle = 'rgba(28, 36, 48, 0.08)';
        ctx.beginPath(); ctx.moveTo(PAD.left, py); ctx.lineTo(w - PAD.right, py); ctx.stroke();
        ctx.fillStyle = '#6b7785';
        ctx.fillText(fmtBytesShort(v), PAD.left - 8, py);
      }
    }
    function drawMarkers(ctx, w, h, x0, x1) {
      const pw = w - PAD.left - PAD.right;
      const px = i => PAD.left + (xOf(i) - x0) / (x1 - x0) * pw + (view.axis === 'entry' ? 0.5 * pw / (x1 - x0) : 0);
      ctx.save();
      ctx.beginPath(); ctx.rect(PAD.left, 0, pw, h); ctx.clip();
      for (const i of M.oomAt) {
        const x = Math.round(px(i)) + 0.5;
        ctx.strokeStyle = '#c0262d'; ctx.setLineDash([4, 3]); ctx.lineWidth = 1.5;
        ctx.beginPath(); ctx.moveTo(x, PAD.top); ctx.lineTo(x, h - PAD.bottom); ctx.stroke();
        ctx.setLineDash([]);
        ctx.fillStyle = '#c0262d';
        ctx.beginPath(); ctx.moveTo(x - 5, PAD.top); ctx.lineTo(x + 5, PAD.top); ctx.lineTo(x, PAD.top + 7); ctx.fill();
        ctx.font = 'bold ' + FONT; ctx.textAlign = 'left'; ctx.textBaseline = 'top';
        ctx.fillText('OOM', x + 6, PAD.top);
      }
      if (view.selected >= 0) {
        const x = Math.round(px(view.selected)) + 0.5;
        ctx.strokeStyle = 'rgba(36, 87, 214, 0.9)'; ctx.lineWidth = 1;
        ctx.beginPath(); ctx.moveTo(x, PAD.top); ctx.lineTo(x, h - PAD.bottom); ctx.stroke();
      }
      ctx.restore();
    }

    // Per pixel column c: the entries [lo[c], lo[c+1]) fall in it.
    function columnBounds(cols, x0, x1) {
      const lo = new Int32Array(cols + 1);
      for (let c = 0; c <= cols; c++) lo[c] = lowerBound(x0 + (x1 - x0) * c / cols);
      return lo;
    }

    // The active-memory timeline: every pixel column shows the live allocations, stacked,
    // at the entry of the column with the most memory live (the state after the entry before
    // the column when it has none), so peaks are never lost.
    function drawActive() {
      const { ctx, dpr, w, h } = prepare(active, 340);
      const cols = Math.max(1, Math.round((w - PAD.left - PAD.right) * dpr));
      const rows = Math.max(1, Math.round((h - PAD.top - PAD.bottom) * dpr));
      const lo = columnBounds(cols, view.x0, view.x1);
      const rep = new Int32Array(cols);
      let ymax = 0;
      for (let c = 0; c < cols; c++) {
        let best = lo[c] - 1, bv = best >= 0 ? M.tot[best] : M.initialTotal;
        for (let i = lo[c]; i < lo[c + 1]; i++) if (M.tot[i] > bv || best < lo[c]) { bv = M.tot[i]; best = i; }
        rep[c] = best;
        if (bv > ymax) ymax = bv;
      }
      const yt = byteTicks(ymax * 1.04, Math.max(3, Math.floor(h / 60)));
      const scale = rows / yt.max;
      const img = ctx.createImageData(cols, rows);
      const px = new Uint32Array(img.data.buffer);
      px.fill(0xffffffff);
      const pick = new Int32Array(cols * rows).fill(-1);
      // Sweep: the live elements in stacking order (dead ones skipped, compacted now and then).
      const nEl = M.elSize.length;
      const order = new Int32Array(nEl + 1);
      const alive = new Uint8Array(nEl);
      let len = 0, dead = 0;
      for (const e of M.initial) { order[len++] = e; alive[e] = 1; }
      let pos = 0, prevRep = -2;
      for (let c = 0; c < cols; c++) {
        const target = rep[c];
        if (target === prevRep && c > 0) {
          for (let r = 0; r < rows; r++) { const k = r * cols + c; px[k] = px[k - 1]; pick[k] = pick[k - 1]; }
          continue;
        }
        prevRep = target;
        for (; pos <= target; pos++) {
          const e = M.evElem[pos];
          const x = M.extraRemove.size ? M.extraRemove.get(pos) : undefined;
          if (x !== undefined && alive[x]) { alive[x] = 0; dead++; }
          if (e < 0) continue;
          if (M.elStart[e] === pos) { order[len++] = e; alive[e] = 1; }
          else if (alive[e]) { alive[e] = 0; dead++; }
        }
        if (dead > 256 && dead * 2 > len) {
          let k = 0;
          for (let j = 0; j < len; j++) if (alive[order[j]]) order[k++] = order[j];
          len = k; dead = 0;
        }
        let cum = 0, r0 = 0;
        for (let j = 0; j < len && r0 < rows; j++) {
          const e = order[j];
          if (!alive[e]) continue;
          cum += M.elSize[e];
          const r1 = Math.min(rows, Math.round(cum * scale));
          if (r1 <= r0) continue;
          const color = M.colors[e];
          for (let r = r0; r < r1; r++) { const k = (rows - 1 - r) * cols + c; px[k] = color; pick[k] = e; }
          if (r1 - r0 >= 4) px[(rows - r1) * cols + c] = M.colorsTop[e];
          r0 = r1;
        }
      }
      ctx.putImageData(img, Math.round(PAD.left * dpr), Math.round(PAD.top * dpr));
      drawYAxis(ctx, w, h, yt);
      drawXAxis(ctx, w, h, view.x0, view.x1);
      drawMarkers(ctx, w, h, view.x0, view.x1);
      lastActive = { cols, rows, rep, pick, dpr, w, h, yt, lo, highlighted: -1 };
      panel.dataset.columns = String(cols);
      active.dataset.drawn = String(cols);
      drawOverview();
      updateRangeInfo(lo[0], lo[cols]);
    }

    function drawOverview() {
      const { ctx, dpr, w, h } = prepare(overview, 54);
      const full = fullDomain();
      const pw = w - PAD.left - PAD.right;
      const cols = Math.max(1, Math.round(pw));
      const saved = [view.x0, view.x1];
      [view.x0, view.x1] = full;
      const lo = columnBounds(cols, full[0], full[1]);
      [view.x0, view.x1] = saved;
      let ymax = 1;
      const a = new Float64Array(cols), r = new Float64Array(cols);
      for (let c = 0; c < cols; c++) {
        let ma = lo[c] > 0 ? M.tot[lo[c] - 1] : M.initialTotal, mr = lo[c] > 0 ? M.res[lo[c] - 1] : M.startReserved;
        for (let i = lo[c]; i < lo[c + 1]; i++) { if (M.tot[i] > ma) ma = M.tot[i]; if (M.res[i] > mr) mr = M.res[i]; }
        a[c] = ma; r[c] = mr;
        ymax = Math.max(ymax, ma, mr);
      }
      ctx.fillStyle = '#f7f8fa'; ctx.fillRect(PAD.left, 0, pw, h);
      const yOf = v => h - 2 - v / ymax * (h - 6);
      ctx.fillStyle = 'rgba(78, 121, 167, 0.55)';
      ctx.beginPath(); ctx.moveTo(PAD.left, h - 2);
      for (let c = 0; c < cols; c++) ctx.lineTo(PAD.left + c + 0.5, yOf(a[c]));
      ctx.lineTo(PAD.left + cols, h - 2); ctx.fill();
      ctx.strokeStyle = RECORDED_COLOR; ctx.lineWidth = 1;
      ctx.beginPath();
      for (let c = 0; c < cols; c++) ctx.lineTo(PAD.left + c + 0.5, yOf(r[c]));
      ctx.stroke();
      ctx.font = FONT; ctx.fillStyle = '#6b7785'; ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
      ctx.fillText('overview', PAD.left - 8, h / 2);
      const vx0 = PAD.left + (view.x0 - full[0]) / (full[1] - full[0]) * pw;
      const vx1 = PAD.left + (view.x1 - full[0]) / (full[1] - full[0]) * pw;
      ctx.fillStyle = 'rgba(28, 36, 48, 0.10)';
      ctx.fillRect(PAD.left, 0, Math.max(0, vx0 - PAD.left), h);
      ctx.fillRect(vx1, 0, Math.max(0, PAD.left + pw - vx1), h);
      ctx.strokeStyle = '#2457d6'; ctx.lineWidth = 1.5;
      ctx.strokeRect(vx0, 1, Math.max(2, vx1 - vx0), h - 2);
    }

    function updateRangeInfo(i0, i1) {
      const info = panel.querySelector('.range-info');
      let allocs = 0, frees = 0, pk = -1, pv = -1;
      for (let i = i0; i < i1; i++) {
        if (M.act[i] === A_ALLOC) allocs++;
        else if (M.act[i] === A_FREE) frees++;
        if (M.tot[i] > pv) { pv = M.tot[i]; pk = i; }
      }
      const full = fullDomain();
      const zoomed = view.x0 > full[0] || view.x1 < full[1];
      let text = (zoomed ? 'Range ' : 'Whole trace ') + fmtX(view.x0) + ' \u2013 ' + fmtX(view.x1) +
        (view.axis === 'time' ? '' : ' (entries)') + ': ' + fmtCount(Math.max(0, i1 - i0)) + ' entries, ' +
        fmtCount(allocs) + ' allocations, ' + fmtCount(frees) + ' frees';
      if (pk >= 0) text += '; most memory live: ' + fmtBytes(pv) + ' at ' + entryText(pk);
      text += '. Whole trace: peak ' + fmtBytes(M.peak) + (M.peakIdx >= 0 ? ' at ' + entryText(M.peakIdx) : ' before the window') + '.';
      info.textContent = text;
    }

    // --- the lines chart: recorded run and candidates ---

    function seriesList() {
      const out = [];
      const showA = panel.querySelector('.show-allocated').checked, showR = panel.querySelector('.show-reserved').checked;
      out.push({ label: 'recorded run (from the trace)', color: RECORDED_BAND, recorded: true, showA, showR, width: 5 });
      if (an && an.modes && an.modes[view.mode]) {
        const mode = an.modes[view.mode];
        mode.cands.forEach((c, k) => {
          const box = panel.querySelector('input[data-mode="' + view.mode + '"][data-candidate="' + k + '"]');
          if (box && !box.checked) return;
          out.push({ label: c.label, color: LINE_COLORS[k % LINE_COLORS.length], cand: c, k, showA, showR,
            width: k === mode.best ? 2.25 : 1.5, best: k === mode.best });
        });
      }
      return out;
    }
    // Per column maxima of allocated and reserved for one series. A series is a step function
    // (a point's values hold until the next point), so a column holds the values carried into
    // it and every point inside it; both maxima come from the same points, so where every
    // point has reserved >= allocated, every column has too. A candidate's line ends with its
    // last point.
    function columnMaxima(s, cols, x0, x1) {
      const a = new Float64Array(cols).fill(NaN), r = new Float64Array(cols).fill(NaN);
      const pts = s.recorded ? M.n : s.cand.e.length;
      const xe = s.recorded ? (i => xOf(i)) : (i => xOf(s.cand.e[i]));
      const va = s.recorded ? (i => M.tot[i]) : (i => s.cand.a[i]);
      const vr = s.recorded ? (i => M.res[i]) : (i => s.cand.r[i]);
      const mx = (p, v) => (p !== p || v > p) ? v : p;
      let ca = s.recorded ? M.initialTotal : NaN, cr = s.recorded ? M.startReserved : NaN;
      let i = 0;
      while (i < pts && xe(i) < x0) { ca = va(i); cr = vr(i); i++; }
      for (let c = 0; c < cols; c++) {
        if (i >= pts && !s.recorded && c > 0 && a[c - 1] !== a[c - 1]) break;
        const end = x0 + (x1 - x0) * (c + 1) / cols;
        let ma = ca, mr = cr, inside = false;
        while (i < pts && xe(i) < end) { ca = va(i); cr = vr(i); ma = mx(ma, ca); mr = mx(mr, cr); i++; inside = true; }
        a[c] = ma; r[c] = mr;
        if (i >= pts && !s.recorded && !inside) { a[c] = NaN; r[c] = NaN; break; }
      }
      return { a, r };
    }
    function drawLines() {
      const { ctx, dpr, w, h } = prepare(lines, 250);
      const cols = Math.max(1, Math.round(w - PAD.left - PAD.right));
      const list = seriesList();
      let ymax = 0;
      belowCount = 0;
      for (const s of list) {
        s.m = columnMaxima(s, cols, view.x0, view.x1);
        for (let c = 0; c < cols; c++) {
          if (s.showA && s.m.a[c] > ymax) ymax = s.m.a[c];
          if (s.showR && s.m.r[c] > ymax) ymax = s.m.r[c];
          if (s.m.r[c] < s.m.a[c]) belowCount++;
        }
      }
      const budget = an && an.budget ? an.budget : 0;
      if (budget > ymax && budget < ymax * 1.5) ymax = budget;
      const yt = byteTicks(Math.max(1, ymax) * 1.04, Math.max(3, Math.floor(h / 55)));
      drawYAxis(ctx, w, h, yt);
      drawXAxis(ctx, w, h, view.x0, view.x1);
      const ph = h - PAD.top - PAD.bottom;
      const yOf = v => PAD.top + ph - v / yt.max * ph;
      if (budget && budget <= yt.max) {
        const y = Math.round(yOf(budget)) + 0.5;
        ctx.strokeStyle = '#c0262d'; ctx.lineWidth = 1; ctx.setLineDash([2, 3]);
        ctx.beginPath(); ctx.moveTo(PAD.left, y); ctx.lineTo(w - PAD.right, y); ctx.stroke(); ctx.setLineDash([]);
        ctx.fillStyle = '#c0262d'; ctx.font = FONT; ctx.textAlign = 'right'; ctx.textBaseline = 'bottom';
        ctx.fillText('budget ' + fmtBytes(budget), w - PAD.right - 4, y - 2);
      }
      ctx.save();
      ctx.beginPath(); ctx.rect(PAD.left, 0, w - PAD.left - PAD.right, h); ctx.clip();
      // The recording first, as a wide band the candidates' lines run along.
      for (const s of list) {
        for (const which of ['r', 'a']) {
          if ((which === 'a' && !s.showA) || (which === 'r' && !s.showR)) continue;
          const v = s.m[which];
          ctx.strokeStyle = s.color; ctx.lineWidth = s.width;
          ctx.setLineDash(which === 'a' ? [5, 3] : []);
          ctx.globalAlpha = which === 'a' ? 0.85 : 1;
          ctx.beginPath();
          let open = false;
          for (let c = 0; c < cols; c++) {
            if (isNaN(v[c])) { open = false; continue; }
            const x = PAD.left + c + 0.5, y = yOf(v[c]);
            if (!open) { ctx.moveTo(x, y); open = true; } else ctx.lineTo(x, y);
          }
          ctx.stroke();
        }
        if (s.cand && s.cand.oom_entry !== null && s.cand.oom_entry !== undefined) {
          const x = PAD.left + (xOf(s.cand.oom_entry) - view.x0) / (view.x1 - view.x0) * (w - PAD.left - PAD.right);
          ctx.setLineDash([]); ctx.globalAlpha = 1; ctx.strokeStyle = s.color; ctx.lineWidth = 2;
          const y = PAD.top + 8;
          ctx.beginPath(); ctx.moveTo(x - 4, y - 4); ctx.lineTo(x + 4, y + 4); ctx.moveTo(x + 4, y - 4); ctx.lineTo(x - 4, y + 4); ctx.stroke();
        }
      }
      ctx.restore();
      ctx.setLineDash([]); ctx.globalAlpha = 1;
      drawMarkers(ctx, w, h, view.x0, view.x1);
      lastLines = { cols, list, yt, w, h };
      panel.dataset.reservedBelowAllocated = String(belowCount);
      lines.dataset.drawn = String(list.length);
      lines.dataset.series = String(list.length);
      drawLegend(list);
    }
    function drawLegend(list) {
      const box = panel.querySelector('.legend');
      clear(box);
      for (const s of list) {
        const item = el('span', 'item');
        const l = el('span', 'line'); l.style.borderTopColor = s.color; item.appendChild(l);
        item.appendChild(el('span', null, s.label + (s.best ? ' (best)' : '')));
        box.appendChild(item);
      }
      const d = el('span', 'item muted');
      const l = el('span', 'line dashed'); l.style.borderTopColor = '#6b7785'; d.appendChild(l);
      d.appendChild(el('span', null, 'allocated (dashed)'));
      box.appendChild(d);
    }

    // --- interaction on the charts ---

    function xFromPixel(container, clientX) {
      const rect = container.getBoundingClientRect();
      const pw = rect.width - PAD.left - PAD.right;
      const f = Math.max(0, Math.min(1, (clientX - rect.left - PAD.left) / pw));
      return { v: view.x0 + f * (view.x1 - view.x0), f, px: clientX - rect.left };
    }
    function clampView(x0, x1) {
      const full = fullDomain();
      const minSpan = view.axis === 'time' ? Math.max(1, (full[1] - full[0]) * 1e-6) : 4;
      let span = Math.max(minSpan, x1 - x0);
      span = Math.min(span, full[1] - full[0]);
      x0 = Math.max(full[0], Math.min(x0, full[1] - span));
      view.x0 = x0; view.x1 = x0 + span;
    }
    // Redraws on the next animation frame, once however many changes come before it; a timer
    // stands in where frames do not come (a hidden tab, a headless browser).
    let pending = false;
    function redraw() {
      if (pending) return;
      pending = true;
      const run = () => { if (!pending) return; pending = false; drawActive(); drawLines(); };
      requestAnimationFrame(run);
      setTimeout(run, 100);
    }
    function nearestOom(container, clientX) {
      const rect = container.getBoundingClientRect();
      const pw = rect.width - PAD.left - PAD.right;
      for (const i of M.oomAt) {
        const x = rect.left + PAD.left + (xOf(i) - view.x0) / (view.x1 - view.x0) * pw;
        if (Math.abs(x - clientX) <= 6) return i;
      }
      return -1;
    }
    function tooltipAt(container, tip, clientX, clientY, nodes) {
      clear(tip);
      for (const n of nodes) tip.appendChild(n);
      tip.hidden = false;
      const rect = container.getBoundingClientRect();
      let x = clientX - rect.left + 14, y = clientY - rect.top + 14;
      if (x + tip.offsetWidth > rect.width) x = Math.max(0, clientX - rect.left - tip.offsetWidth - 14);
      if (y + tip.offsetHeight > rect.height + 120) y = Math.max(0, clientY - rect.top - tip.offsetHeight - 10);
      tip.style.left = x + 'px'; tip.style.top = y + 'px';
    }
    function elementText(e) {
      const parts = [fmtBytes(M.elSize[e]) + ' at ' + hexAddr(M.elAddr[e])];
      const start = M.elStart[e], end = M.elEnd[e];
      parts.push(start < 0 ? 'live before the window' : 'allocated at ' + entryText(start));
      parts.push(end >= M.n ? 'still live at the end' : 'freed at ' + entryText(end));
      if (M.elFreeReq[e] >= 0 && M.elFreeReq[e] !== end) parts.push('free requested at entry ' + fmtCount(M.elFreeReq[e]));
      return parts.join(' \u00b7 ');
    }
    let shownStack = null;
    function showStack(title, stackId) {
      const box = panel.querySelector('.stack-panel');
      if (!box) return;
      shownStack = { title, stackId };
      box.querySelector('.stack-title').textContent = title;
      const native = box.querySelector('.show-native');
      box.querySelector('.stack-frames').textContent = framesText(stackId, 0, native && native.checked);
    }
    // Darkens every pixel of allocation e (-1: none) on an overlay, so its band shows across time.
    function highlight(e) {
      const la = lastActive;
      if (!la || la.highlighted === e) return;
      la.highlighted = e;
      let overlay = active.querySelector('canvas.highlight');
      if (!overlay) {
        overlay = el('canvas', 'highlight');
        active.insertBefore(overlay, active.querySelector('.tooltip'));
      }
      overlay.width = la.cols; overlay.height = la.rows;
      overlay.style.left = PAD.left + 'px'; overlay.style.top = PAD.top + 'px';
      overlay.style.width = la.cols / la.dpr + 'px'; overlay.style.height = la.rows / la.dpr + 'px';
      const ctx = overlay.getContext('2d');
      if (e < 0) { ctx.clearRect(0, 0, la.cols, la.rows); return; }
      const img = ctx.createImageData(la.cols, la.rows);
      const px = new Uint32Array(img.data.buffer);
      const fill = packRGBA(17, 26, 39) & 0x73ffffff;  // 45% opaque ink
      for (let k = 0; k < la.pick.length; k++) if (la.pick[k] === e) px[k] = fill;
      ctx.putImageData(img, 0, 0);
    }
    function setupActive() {
      const canvas = active.querySelector('canvas'), tip = active.querySelector('.tooltip');
      const box = el('div', 'selection-box'); box.hidden = true; active.appendChild(box);
      let drag = null;
      canvas.addEventListener('mousemove', ev => {
        if (drag) {
          const p = xFromPixel(active, ev.clientX);
          const a = Math.min(drag.px, p.px), b = Math.max(drag.px, p.px);
          box.hidden = false; box.style.left = a + 'px'; box.style.width = (b - a) + 'px';
          tip.hidden = true;
          return;
        }
        if (!lastActive) return;
        const rect = canvas.getBoundingClientRect();
        const c = Math.floor((ev.clientX - rect.left - PAD.left) * lastActive.dpr);
        const r = Math.floor((ev.clientY - rect.top - PAD.top) * lastActive.dpr);
        const oom = nearestOom(active, ev.clientX);
        if (oom >= 0) {
          const k = M.oomAt.indexOf(oom);
          tooltipAt(active, tip, ev.clientX, ev.clientY, [el('div', 'tt-title', 'Out of memory at ' + entryText(oom)),
            el('div', null, 'requested ' + fmtBytes(M.size[oom]) + '; the driver reported ' + fmtBytes(M.oomFree[k]) + ' free. Click to inspect.')]);
          return;
        }
        if (c < 0 || r < 0 || c >= lastActive.cols || r >= lastActive.rows) { tip.hidden = true; return; }
        const e = lastActive.pick[r * lastActive.cols + c];
        const at = lastActive.rep[c];
        const here = 'At ' + entryText(at) + ': ' + fmtBytes(at >= 0 ? M.tot[at] : M.initialTotal) + ' live';
        highlight(e);
        if (e < 0) { tooltipAt(active, tip, ev.clientX, ev.clientY, [el('div', null, here)]); return; }
        const site = siteOf(M.elStack[e]);
        tooltipAt(active, tip, ev.clientX, ev.clientY, [el('div', 'tt-title', site.label), el('div', null, elementText(e)),
          el('div', 'tt-frames', framesText(M.elStack[e], 8)), el('div', 'muted', here)]);
        showStack(site.full + ' \u2014 ' + elementText(e), M.elStack[e]);
      });
      canvas.addEventListener('mouseleave', () => { tip.hidden = true; highlight(-1); });
      const native = panel.querySelector('.stack-panel .show-native');
      if (native) native.addEventListener('change', () => { if (shownStack) showStack(shownStack.title, shownStack.stackId); });
      canvas.addEventListener('mousedown', ev => {
        if (ev.button !== 0) return;
        drag = xFromPixel(active, ev.clientX);
        ev.preventDefault();
      });
      window.addEventListener('mouseup', ev => {
        if (!drag) return;
        const start = drag; drag = null; box.hidden = true;
        const end = xFromPixel(active, ev.clientX);
        if (Math.abs(end.px - start.px) > 4) {
          clampView(Math.min(start.v, end.v), Math.max(start.v, end.v));
          redraw();
          return;
        }
        const oom = nearestOom(active, ev.clientX);
        if (oom >= 0) { select(oom); return; }
        if (!lastActive) return;
        const rect = canvas.getBoundingClientRect();
        const c = Math.floor((ev.clientX - rect.left - PAD.left) * lastActive.dpr);
        if (c >= 0 && c < lastActive.cols) select(lastActive.rep[c]);
      });
      canvas.addEventListener('wheel', ev => {
        ev.preventDefault();
        const p = xFromPixel(active, ev.clientX);
        const k = Math.pow(1.0015, ev.deltaY);
        const span = (view.x1 - view.x0) * k;
        clampView(p.v - p.f * span, p.v - p.f * span + span);
        redraw();
      }, { passive: false });
      canvas.addEventListener('dblclick', () => { resetView(); redraw(); });
    }
    function setupOverview() {
      const canvas = overview.querySelector('canvas');
      let drag = null;
      const toV = clientX => {
        const rect = canvas.getBoundingClientRect();
        const full = fullDomain();
        const f = Math.max(0, Math.min(1, (clientX - rect.left - PAD.left) / (rect.width - PAD.left - PAD.right)));
        return full[0] + f * (full[1] - full[0]);
      };
      canvas.addEventListener('mousedown', ev => {
        const v = toV(ev.clientX);
        drag = (v >= view.x0 && v <= view.x1) ? { kind: 'pan', v, x0: view.x0, x1: view.x1 } : { kind: 'range', v };
        ev.preventDefault();
      });
      window.addEventListener('mousemove', ev => {
        if (!drag) return;
        const v = toV(ev.clientX);
        if (drag.kind === 'pan') clampView(drag.x0 + v - drag.v, drag.x1 + v - drag.v);
        else clampView(Math.min(drag.v, v), Math.max(drag.v, v));
        redraw();
      });
      window.addEventListener('mouseup', () => { drag = null; });
    }
    function setupLines() {
      const canvas = lines.querySelector('canvas'), tip = lines.querySelector('.tooltip');
      canvas.addEventListener('mousemove', ev => {
        if (!lastLines) return;
        const rect = canvas.getBoundingClientRect();
        const c = Math.floor(ev.clientX - rect.left - PAD.left);
        if (c < 0 || c >= lastLines.cols) { tip.hidden = true; return; }
        const p = xFromPixel(lines, ev.clientX);
        const nodes = [el('div', 'tt-title', fmtX(p.v))];
        for (const s of lastLines.list) {
          if (isNaN(s.m.r[c])) continue;
          const row = el('div', 'tt-row');
          const sw = el('span', 'tt-sw'); sw.style.background = s.color; row.appendChild(sw);
          row.appendChild(el('span', null, s.label + ': ' + fmtBytes(s.m.r[c]) + ' reserved, ' + fmtBytes(s.m.a[c]) + ' allocated'));
          nodes.push(row);
        }
        tooltipAt(lines, tip, ev.clientX, ev.clientY, nodes);
      });
      canvas.addEventListener('mouseleave', () => { tip.hidden = true; });
      canvas.addEventListener('wheel', ev => {
        ev.preventDefault();
        const p = xFromPixel(lines, ev.clientX);
        const span = (view.x1 - view.x0) * Math.pow(1.0015, ev.deltaY);
        clampView(p.v - p.f * span, p.v - p.f * span + span);
        redraw();
      }, { passive: false });
      canvas.addEventListener('click', ev => {
        const oom = nearestOom(lines, ev.clientX);
        if (oom >= 0) select(oom);
      });
      panel.querySelectorAll('.candidates input[type=checkbox], .show-allocated, .show-reserved')
        .forEach(b => b.addEventListener('change', () => drawLines()));
      panel.querySelectorAll('.modes .mode').forEach(b => b.addEventListener('click', () => {
        view.mode = Number(b.dataset.mode);
        panel.querySelectorAll('.modes .mode').forEach(x => x.classList.toggle('active', x === b));
        panel.querySelectorAll('.mode-panel').forEach(p => { p.hidden = p.dataset.mode !== b.dataset.mode; });
        drawLines();
      }));
      if (an && an.modes) {
        panel.querySelectorAll('.swatch[data-candidate]').forEach(s => {
          s.style.background = LINE_COLORS[Number(s.dataset.candidate) % LINE_COLORS.length];
        });
      }
    }

    // --- the allocator state at an event ---

    // State after entry `idx`: segments (sorted by address) and live blocks by address. Moves
    // from the current state backwards (undoing entries) or forwards (redoing them).
    const S = { at: -2, segs: [], blocks: new Map() };
    function finalState() {
      const sg = dev.segments;
      S.segs = [];
      for (let s = 0; s < sg.addr.length; s++) {
        S.segs.push({ addr: sg.addr[s], size: sg.size[s], stream: sg.stream[s], flags: sg.flags[s], stack: sg.stack[s], pool: sg.pool[s] });
      }
      S.blocks = new Map();
      for (let b = 0; b < sg.b_addr.length; b++) {
        if (sg.b_state[b] === 0) continue;
        S.blocks.set(sg.b_addr[b], { addr: sg.b_addr[b], size: sg.b_size[b], req: sg.b_req[b] || sg.b_size[b],
          pending: sg.b_state[b] === 2, stack: sg.b_stack[b], exact: true });
      }
      S.at = M ? M.n - 1 : -1;
    }
    function segIndexAt(a) {  // the segment holding address a, or -1
      let lo = 0, hi = S.segs.length - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1, s = S.segs[mid];
        if (a < s.addr) hi = mid - 1; else if (a >= s.addr + s.size) lo = mid + 1; else return mid;
      }
      return -1;
    }
    function insertAt(a) {
      let lo = 0, hi = S.segs.length;
      while (lo < hi) { const mid = (lo + hi) >> 1; if (S.segs[mid].addr < a) lo = mid + 1; else hi = mid; }
      return lo;
    }
    function addRange(a, sz, stream, merge, stack) {
      const k = insertAt(a);
      const seg = { addr: a, size: sz, stream, flags: merge ? 3 : 1, stack, pool: null };
      S.segs.splice(k, 0, seg);
      if (!merge) return;
      const next = S.segs[k + 1];
      if (next && seg.addr + seg.size === next.addr && next.stream === seg.stream && (next.flags & 2)) {
        seg.size += next.size; seg.pool = next.pool; S.segs.splice(k + 1, 1);
      }
      const prev = S.segs[k - 1];
      if (prev && prev.addr + prev.size === seg.addr && prev.stream === seg.stream && (prev.flags & 2)) {
        prev.size += seg.size; S.segs.splice(k, 1);
      }
    }
    function removeRange(a, sz, merge) {
      if (!merge) {
        const k = S.segs.findIndex(s => s.addr === a);
        if (k >= 0) S.segs.splice(k, 1);
        return;
      }
      const k = segIndexAt(a);
      if (k < 0) return;
      const s = S.segs[k], end = a + sz, sEnd = s.addr + s.size;
      if (s.addr === a && sEnd <= end) S.segs.splice(k, 1);
      else if (s.addr === a) { s.addr = end; s.size = sEnd - end; }
      else if (sEnd <= end) s.size = a - s.addr;
      else { s.size = a - s.addr; S.segs.splice(k + 1, 0, { ...s, addr: end, size: sEnd - end }); }
    }
    const roundSize = sz => sz < 512 ? 512 : Math.ceil(sz / 512) * 512;
    function undo(i) {
      const a = M.addr[i], sz = M.size[i], st = M.streams ? M.streams[i] : 0;
      switch (M.act[i]) {
        case A_ALLOC: S.blocks.delete(a); break;
        case A_FREE_REQ: { const b = S.blocks.get(a); if (b) b.pending = false; break; }
        case A_FREE: S.blocks.set(a, { addr: a, size: roundSize(sz), req: sz, pending: true, stack: M.stack[i], exact: false }); break;
        case A_SEG_ALLOC: removeRange(a, sz, false); break;
        case A_SEG_FREE: addRange(a, sz, st, false, M.stack[i]); break;
        case A_SEG_MAP: removeRange(a, sz, true); break;
        case A_SEG_UNMAP: addRange(a, sz, st, true, M.stack[i]); break;
        default: break;
      }
    }
    function redo(i) {
      const a = M.addr[i], sz = M.size[i], st = M.streams ? M.streams[i] : 0;
      switch (M.act[i]) {
        case A_ALLOC: S.blocks.set(a, { addr: a, size: roundSize(sz), req: sz, pending: false, stack: M.stack[i], exact: false }); break;
        case A_FREE_REQ: { const b = S.blocks.get(a); if (b) b.pending = true; break; }
        case A_FREE: S.blocks.delete(a); break;
        case A_SEG_ALLOC: addRange(a, sz, st, false, M.stack[i]); break;
        case A_SEG_FREE: removeRange(a, sz, false); break;
        case A_SEG_MAP: addRange(a, sz, st, true, M.stack[i]); break;
        case A_SEG_UNMAP: removeRange(a, sz, true); break;
        default: break;
      }
    }
    function moveTo(idx) {
      if (S.at === -2) finalState();
      if (!M) return;
      // Redoing forward loses the exact sizes of blocks the final state knew; walking back from
      // the final state is exact, so go forward only for short steps.
      if (idx > S.at && idx - S.at > 2000) finalState();
      while (S.at > idx) undo(S.at--);
      while (S.at < idx) redo(++S.at);
    }

    let segLayout = null, selectedSeg = -1;
    function drawState() {
      const container = q('[data-chart=segments]');
      const segs = S.segs;
      // Blocks into their segments.
      const perSeg = segs.map(() => []);
      let allocated = 0, pendingBytes = 0, unplaced = 0;
      for (const b of S.blocks.values()) {
        const k = segIndexAt(b.addr);
        if (k < 0) { unplaced++; continue; }
        perSeg[k].push(b);
        allocated += b.req;
        if (b.pending) pendingBytes += b.req;
      }
      let reserved = 0, largest = 0, largestFree = 0, freeTotal = 0;
      for (let k = 0; k < segs.length; k++) {
        const s = segs[k];
        reserved += s.size; largest = Math.max(largest, s.size);
        perSeg[k].sort((x, y) => x.addr - y.addr);
        let cur = s.addr;
        for (const b of perSeg[k]) { if (b.addr > cur) largestFree = Math.max(largestFree, b.addr - cur); cur = Math.max(cur, b.addr + b.size); }
        if (s.addr + s.size > cur) largestFree = Math.max(largestFree, s.addr + s.size - cur);
        let used = 0;
        for (const b of perSeg[k]) used += b.size;
        freeTotal += Math.max(0, s.size - used);
      }
      // Stats.
      const stats = panel.querySelector('.state-stats');
      clear(stats);
      const stat = (label, value) => {
        const d = el('div', 'stat'); d.appendChild(el('div', 'stat-label', label)); d.appendChild(el('div', 'stat-value', value));
        stats.appendChild(d);
      };
      stat('reserved', fmtBytes(reserved));
      stat('allocated', fmtBytes(allocated));
      stat('segments', fmtCount(segs.length));
      stat('live blocks', fmtCount(S.blocks.size - unplaced));
      stat('free in segments', fmtBytes(freeTotal));
      stat('largest free range', fmtBytes(largestFree));
      if (pendingBytes) stat('waiting for streams', fmtBytes(pendingBytes));
      // Layout: segments in address order, packed into rows.
      const dpr = window.devicePixelRatio || 1;
      const w = Math.max(320, container.clientWidth);
      const pw = w - 16;
      let cap = Math.max(largest, reserved / 36, 1);
      const SEP = 3;
      let rects;
      for (let attempt = 0; attempt < 6; attempt++) {
        rects = [];
        let x = 0, row = 0;
        const scale = pw / cap;
        for (let k = 0; k < segs.length; k++) {
          const sw = Math.max(2, segs[k].size * scale);
          if (x > 0 && x + sw > pw) { row++; x = 0; }
          rects.push({ k, x: 8 + x, w: Math.min(sw, pw), row });
          x += sw + SEP;
        }
        if (row < 48) break;
        cap *= 1.6;
      }
      const nrows = rects.length ? rects[rects.length - 1].row + 1 : 1;
      // Rows get thinner when there are many of them.
      const ROW = nrows > 24 ? 11 : nrows > 12 ? 14 : 18, GAP = nrows > 24 ? 4 : 6;
      for (const rc of rects) rc.y = 6 + rc.row * (ROW + GAP);
      const h = Math.max(40, 12 + nrows * (ROW + GAP));
      const canvas = container.querySelector('canvas');
      canvas.style.height = h + 'px';
      canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
      const ctx = canvas.getContext('2d');
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      const scale = pw / cap;
      for (const rc of rects) {
        const s = segs[rc.k];
        ctx.fillStyle = '#eef0f3'; ctx.fillRect(rc.x, rc.y, rc.w, ROW);
        const bpx = rc.w / s.size;
        for (const b of perSeg[rc.k]) {
          const bx = rc.x + (b.addr - s.addr) * bpx;
          const rw = Math.max(0.6, b.req * bpx), fw = Math.max(0, (b.size - b.req) * bpx);
          ctx.fillStyle = b.pending ? '#e03b3b' : siteColor(b.stack, palette);
          ctx.fillRect(bx, rc.y, rw, ROW);
          if (fw >= 1) { ctx.fillStyle = '#f2b84b'; ctx.fillRect(bx + rw, rc.y, fw, ROW); }
        }
        ctx.strokeStyle = rc.k === selectedSeg ? '#2457d6' : 'rgba(28, 36, 48, 0.45)';
        ctx.lineWidth = rc.k === selectedSeg ? 2 : 1;
        ctx.setLineDash(s.flags & 2 ? [3, 2] : []);
        ctx.strokeRect(rc.x + 0.5, rc.y + 0.5, Math.max(1, rc.w - 1), ROW - 1);
      }
      ctx.setLineDash([]);
      segLayout = { rects, perSeg, ROW, scale };
      container.dataset.segments = String(segs.length);
      container.dataset.blocks = String(S.blocks.size - unplaced);
      // The state walked from the final segments against the totals summed along the trace:
      // the two must agree (the browser test compares them).
      container.dataset.reserved = String(reserved);
      container.dataset.allocated = String(allocated);
      if (M) {
        const i = view.selected;
        container.dataset.traceReserved = String(i >= 0 ? M.res[i] : M.startReserved);
        container.dataset.traceAllocated = String(i >= 0 ? M.tot[i] : M.initialTotal);
      }
      drawStateSites();
      if (selectedSeg >= segs.length) selectedSeg = -1;
      drawSegmentDetail();
    }
    function hitState(clientX, clientY) {
      const canvas = q('[data-chart=segments] canvas');
      const rect = canvas.getBoundingClientRect();
      const x = clientX - rect.left, y = clientY - rect.top;
      if (!segLayout) return null;
      for (const rc of segLayout.rects) {
        if (x < rc.x || x > rc.x + rc.w || y < rc.y || y > rc.y + segLayout.ROW) continue;
        const s = S.segs[rc.k];
        const a = s.addr + (x - rc.x) / rc.w * s.size;
        const blocks = segLayout.perSeg[rc.k];
        let block = null;
        for (const b of blocks) if (a >= b.addr && a < b.addr + Math.max(b.size, (s.size / rc.w) * 2)) { block = b; break; }
        return { k: rc.k, seg: s, block };
      }
      return null;
    }
    function setupState() {
      const container = q('[data-chart=segments]');
      const canvas = container.querySelector('canvas'), tip = container.querySelector('.tooltip');
      canvas.addEventListener('mousemove', ev => {
        const hit = hitState(ev.clientX, ev.clientY);
        if (!hit) { tip.hidden = true; return; }
        const s = hit.seg;
        const nodes = [el('div', 'tt-title', 'segment ' + hexAddr(s.addr) + ': ' + fmtBytes(s.size) +
          (s.flags & 2 ? ' (expandable)' : (s.flags & 1) ? '' : ' (small pool)'))];
        if (hit.block) {
          const b = hit.block;
          nodes.push(el('div', null, 'block ' + hexAddr(b.addr) + ': ' + fmtBytes(b.req) + ' requested, ' +
            (b.exact ? '' : '\u2248') + fmtBytes(b.size) + ' held' + (b.pending ? ' \u00b7 freed, waiting for another stream' : '')));
          nodes.push(el('div', 'tt-frames', framesText(b.stack, 8)));
        } else {
          nodes.push(el('div', null, 'free space'));
        }
        tooltipAt(container, tip, ev.clientX, ev.clientY, nodes);
      });
      canvas.addEventListener('mouseleave', () => { tip.hidden = true; });
      canvas.addEventListener('click', ev => {
        const hit = hitState(ev.clientX, ev.clientY);
        selectedSeg = hit ? hit.k : -1;
        drawState();
      });
      const nav = panel.querySelector('.event-nav');
      if (!nav || !M) return;
      nav.querySelector('.ev-prev').addEventListener('click', () => select(view.selected - 1));
      nav.querySelector('.ev-next').addEventListener('click', () => select(view.selected + 1));
      nav.querySelector('.ev-peak').addEventListener('click', () => select(M.peakIdx));
      nav.querySelector('.ev-end').addEventListener('click', () => select(M.n - 1));
      const input = nav.querySelector('.ev-index');
      input.addEventListener('change', () => select(Number(input.value)));
      const oomBtn = nav.querySelector('.ev-oom');
      if (oomBtn) {
        let k = 0;
        oomBtn.addEventListener('click', () => { select(M.oomAt[k % M.oomAt.length]); k++; });
      }
      panel.querySelectorAll('.goto-entry').forEach(a => a.addEventListener('click', ev => {
        ev.preventDefault();
        select(Number(a.dataset.entry));
        q('[data-chart=segments]').scrollIntoView({ behavior: 'smooth', block: 'center' });
      }));
    }
    function drawStateSites() {
      const box = panel.querySelector('.state-sites');
      clear(box);
      const groups = new Map();
      let total = 0;
      for (const b of S.blocks.values()) {
        const s = siteOf(b.stack);
        const key = s.key + '|' + s.category;
        let g = groups.get(key);
        if (!g) { g = { site: s, stack: b.stack, bytes: 0, count: 0 }; groups.set(key, g); }
        g.bytes += b.req; g.count++; total += b.req;
      }
      const list = [...groups.values()].sort((a, b) => b.bytes - a.bytes).slice(0, 14);
      if (!list.length) { box.appendChild(el('p', 'muted', 'No live blocks.')); return; }
      const t = el('table', 'sites');
      const head = el('tr');
      for (const [h, cls] of [['call site', ''], ['category', ''], ['bytes', 'num'], ['blocks', 'num'], ['share', '']]) head.appendChild(el('th', cls, h));
      const thead = el('thead'); thead.appendChild(head); t.appendChild(thead);
      const tbody = el('tbody');
      for (const g of list) {
        const tr = el('tr');
        const td = el('td', 'site');
        const code = el('code', null, g.site.label); code.title = g.site.full; td.appendChild(code);
        tr.appendChild(td);
        tr.appendChild(el('td', 'muted', g.site.category.replace('_', ' ')));
        tr.appendChild(el('td', 'num', fmtBytes(g.bytes)));
        tr.appendChild(el('td', 'num', fmtCount(g.count)));
        const bar = el('div', 'bar'); const fill = el('i'); fill.style.width = (100 * g.bytes / Math.max(1, total)).toFixed(1) + '%';
        fill.style.background = siteColor(g.stack, palette); bar.appendChild(fill);
        const tdb = el('td'); tdb.appendChild(bar); tr.appendChild(tdb);
        tr.addEventListener('mouseenter', () => { if (M) showStack(g.site.full, g.stack); });
        tbody.appendChild(tr);
      }
      t.appendChild(tbody);
      box.appendChild(t);
    }
    function drawSegmentDetail() {
      const box = panel.querySelector('.segment-detail');
      clear(box);
      if (selectedSeg < 0 || !segLayout) { box.appendChild(el('p', 'muted', 'Click a segment to list its blocks.')); return; }
      const s = S.segs[selectedSeg];
      box.appendChild(el('p', null, hexAddr(s.addr) + ' \u00b7 ' + fmtBytes(s.size) + (s.flags & 2 ? ' \u00b7 expandable' : '') +
        ((s.flags & 1) ? ' \u00b7 large pool' : ' \u00b7 small pool') + (s.stream ? ' \u00b7 stream ' + tables.streams[s.stream] : '')));
      const t = el('table');
      const head = el('tr');
      for (const [h, cls] of [['address', ''], ['held', 'num'], ['requested', 'num'], ['state', ''], ['call site', '']]) head.appendChild(el('th', cls, h));
      const thead = el('thead'); thead.appendChild(head); t.appendChild(thead);
      const tbody = el('tbody');
      let cur = s.addr, rowsOut = 0;
      const row = (a, held, req, state, site) => {
        const tr = el('tr');
        tr.appendChild(el('td', null, hexAddr(a)));
        tr.appendChild(el('td', 'num', held));
        tr.appendChild(el('td', 'num', req));
        tr.appendChild(el('td', null, state));
        const td = el('td', 'site'); td.appendChild(el('code', null, site)); tr.appendChild(td);
        tbody.appendChild(tr);
        rowsOut++;
      };
      for (const b of segLayout.perSeg[selectedSeg]) {
        if (rowsOut > 400) break;
        if (b.addr > cur) row(cur, fmtBytes(b.addr - cur), '', 'free', '');
        row(b.addr, (b.exact ? '' : '\u2248') + fmtBytes(b.size), fmtBytes(b.req), b.pending ? 'pending free' : 'allocated', siteOf(b.stack).label);
        cur = Math.max(cur, b.addr + b.size);
      }
      if (s.addr + s.size > cur && rowsOut <= 400) row(cur, fmtBytes(s.addr + s.size - cur), '', 'free', '');
      t.appendChild(tbody);
      box.appendChild(t);
    }
    function describeEvent() {
      const p = panel.querySelector('.event-desc');
      clear(p);
      if (!M) { p.textContent = 'The final state of the snapshot.'; return; }
      const i = view.selected;
      if (i < 0) { p.textContent = 'Before the first trace entry (the state the window started from).'; return; }
      const a = M.act[i];
      p.appendChild(el('span', null, 'Entry ' + fmtCount(i) + ' of ' + fmtCount(M.n) + (M.time ? ' \u00b7 t = ' + fmtTime(M.time[i]) : '') + ' \u00b7 '));
      p.appendChild(el('span', 'ev-action' + (a === A_OOM ? ' oom' : ''), ACT[a] || '?'));
      let rest = '';
      if (a === A_OOM) rest = ' \u2014 requested ' + fmtBytes(M.size[i]) + ', the driver reported ' + fmtBytes(M.oomFree[M.oomAt.indexOf(i)]) + ' free';
      else if (a <= A_SEG_UNMAP) rest = ' ' + fmtBytes(M.size[i]) + ' at ' + hexAddr(M.addr[i]);
      rest += ' \u00b7 ' + fmtBytes(M.tot[i]) + ' live, ' + fmtBytes(M.res[i]) + ' reserved after it';
      p.appendChild(el('span', null, rest));
      if (framesOf(M.stack[i]).length) {
        const d = el('details'); d.appendChild(el('summary', null, 'stack'));
        d.appendChild(el('pre', null, framesText(M.stack[i], 0))); p.appendChild(d);
      }
    }
    function select(i) {
      if (!M) return;
      i = Math.max(-1, Math.min(M.n - 1, Math.round(i)));
      view.selected = i;
      const input = panel.querySelector('.ev-index');
      if (input) input.value = String(i);
      moveTo(i);
      describeEvent();
      drawState();
      panel.dataset.selected = String(i);
      redraw();
    }

    // --- set-up ---
    function render() {
      const t0 = performance.now();
      if (M) {
        const sel = panel.querySelector('.axis-select');
        if (!M.timeOk) { sel.querySelector('option[value=time]').disabled = true; sel.value = 'entry'; }
        sel.value = view.axis;
        sel.addEventListener('change', () => {
          // Keep the visible entries when switching the axis.
          const i0 = lowerBound(view.x0), i1 = lowerBound(view.x1);
          view.axis = sel.value;
          const full = fullDomain();
          if (i0 <= 0 && i1 >= M.n) resetView();
          else clampView(i0 <= 0 ? full[0] : xOf(i0), i1 >= M.n ? full[1] : xOf(i1));
          redraw();
        });
        panel.querySelector('.zoom-reset').addEventListener('click', () => { resetView(); redraw(); });
        resetView();
        setupActive(); setupOverview(); setupLines();
        drawActive(); drawLines();
        panel.dataset.elements = String(M.elSize.length);
      }
      setupState();
      finalState();
      if (M) {
        moveTo(view.selected);
        const input = panel.querySelector('.ev-index');
        if (input) input.value = String(view.selected);
      }
      describeEvent();
      drawState();
      drawColorKey();
      const colorSelect = panel.querySelector('.color-select');
      if (colorSelect) colorSelect.addEventListener('change', () => setColorMode(colorSelect.value));
      panel.dataset.renderMs = (performance.now() - t0).toFixed(1);
      panel.dataset.renderedMs = performance.now().toFixed(1);
    }
    // Shows entries [a, b) only (a deep link's range=a-b).
    function zoomEntries(a, b) {
      if (!M) return;
      a = Math.max(0, Math.min(M.n - 1, a)); b = Math.max(a + 1, Math.min(M.n, b));
      const full = fullDomain();
      clampView(a <= 0 ? full[0] : xOf(a), b >= M.n ? full[1] : xOf(b));
      drawActive(); drawLines();
    }
    return { render, redraw: () => { if (M) { drawActive(); drawLines(); } drawState(); }, step: d => select(view.selected + d),
      select, zoomEntries, hasTrace: !!M };
  }

  // --- tabs, copy buttons, keyboard ---

  const views = new Map();
  function show(device) {
    const panels = document.querySelectorAll('.device-panel');
    panels.forEach(p => { p.hidden = p.dataset.device !== String(device); });
    document.querySelectorAll('#device-tabs .tab').forEach(t => t.classList.toggle('active', t.dataset.device === String(device)));
    if (!views.has(device)) {
      const dev = data.devices.find(d => d.device === device);
      const panel = document.getElementById('device-' + device);
      if (!dev || !panel) return;
      const v = DeviceView(dev, panel);
      views.set(device, v);
      v.render();
    }
    current = device;
  }
  let current = null;
  document.querySelectorAll('#device-tabs .tab').forEach(t => t.addEventListener('click', () => {
    show(Number(t.dataset.device));
    try { history.replaceState(null, '', '#cuda:' + t.dataset.device); } catch (e) { /* file: URLs in some browsers */ }
  }));
  document.querySelectorAll('.copy').forEach(b => b.addEventListener('click', () => {
    const text = b.parentElement.querySelector('code').textContent;
    const done = () => { b.textContent = 'Copied'; b.classList.add('done'); setTimeout(() => { b.textContent = 'Copy'; b.classList.remove('done'); }, 1400); };
    if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(text).then(done, () => fallback());
    else fallback();
    function fallback() {
      const r = document.createRange(); r.selectNodeContents(b.parentElement.querySelector('code'));
      const s = getSelection(); s.removeAllRanges(); s.addRange(r);
      try { document.execCommand('copy'); done(); } catch (e) { /* the text stays selected */ }
    }
  }));
  document.addEventListener('keydown', ev => {
    if (ev.target instanceof HTMLInputElement || ev.target instanceof HTMLSelectElement) return;
    const v = views.get(current);
    if (!v || !v.hasTrace) return;
    if (ev.key === 'ArrowLeft') { v.step(-1); ev.preventDefault(); }
    if (ev.key === 'ArrowRight') { v.step(1); ev.preventDefault(); }
  });
  let resizeTimer = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { const v = views.get(current); if (v) v.redraw(); }, 150);
  });

  // The first device: the URL's #cuda:N, else the active tab written by the page. A link can
  // also select an entry and a range of entries: #cuda:1&entry=421&range=300-500.
  const link = {};
  for (const part of decodeURIComponent(location.hash.replace(/^#/, '')).split('&')) {
    const m = /^(cuda:|entry=|range=)(.*)$/.exec(part);
    if (m) link[m[1] === 'cuda:' ? 'device' : m[1].slice(0, -1)] = m[2];
  }
  const first = document.querySelector('#device-tabs .tab.active');
  const start = link.device !== undefined && document.getElementById('device-' + link.device) ? Number(link.device)
    : first ? Number(first.dataset.device) : null;
  if (start !== null) {
    show(start);
    const v = views.get(start);
    const range = /^(\d+)-(\d+)$/.exec(link.range || '');
    if (v && range) v.zoomEntries(Number(range[1]), Number(range[2]));
    if (v && /^-?\d+$/.test(link.entry || '')) v.select(Number(link.entry));
  }
  const ms = performance.now();
  root.dataset.renderedMs = ms.toFixed(1);
  const rt = document.getElementById('render-time');
  if (rt) rt.textContent = 'rendered in ' + Math.round(ms) + ' ms';
})();
