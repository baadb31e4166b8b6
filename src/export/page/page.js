/* page.js — the script of kprof's offline HTML pages (issue 27).
 *
 * src/export/html.c embeds this file verbatim in every page it writes (`kprof report --html`,
 * `kprof diff --html`, `kprof bench --html`, `kprof sweep --html`). It reads the JSON of
 * <script id="kprof-data"> (docs/formats/html.md) and draws the page into #app: a trace
 * (header, verdicts, tables, call tree, histograms, a canvas timeline), a bench, a diff or a
 * sweep. Plain ES2017, no library, no network: the page's Content-Security-Policy allows only
 * its inline script and style.
 *
 * Every number shown from the data is an element with data-k (its JSON path from the data's
 * root, dots and [i]) and data-v (String of the raw JSON number); its text is the number for
 * people with a unit (README.md next to this file says how each is written).
 * When the first draw is done: document.documentElement.dataset.drawn = "1" and window.kprofDrawnMs.
 */
(function () {
  "use strict";

  /* ---- DOM helpers ------------------------------------------------------------------------- */

  const SVGNS = "http://www.w3.org/2000/svg";

  function add(e, kids) {
    if (kids == null) return e;
    if (!Array.isArray(kids)) kids = [kids];
    for (const c of kids) {
      if (c == null || c === false) continue;
      if (Array.isArray(c)) { add(e, c); continue; }
      e.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
    }
    return e;
  }
  function attrs(e, a) {
    if (a)
      for (const k in a) {
        const v = a[k];
        if (v == null || v === false) continue;
        if (k === "class") e.setAttribute("class", v);
        else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, v === true ? "" : v);
      }
    return e;
  }
  function h(tag, a, kids) { return add(attrs(document.createElement(tag), a), kids); }
  function sv(tag, a, kids) { return add(attrs(document.createElementNS(SVGNS, tag), a), kids); }
  function isNum(v) { return typeof v === "number" && isFinite(v); }
  function isObj(v) { return v != null && typeof v === "object" && !Array.isArray(v); }
  function arr(v) { return Array.isArray(v) ? v : []; }
  function words(k) { k = String(k); return (/^(gb|gflop)_per_s$/.test(k) ? k.replace(/_per_s$/, "/s") : k.replace(/(_(gb|gflop))?_per_s$/, "")).replace(/([^r])_(s|ms|ns|us)$/, "$1").replace(/_/g, " "); }

  /* ---- numbers for people ------------------------------------------------------------------ */

  function sig(x, n) {
    if (!isFinite(x)) return String(x);
    if (x === 0) return "0";
    return String(Number(x.toPrecision(n || 3)));
  }
  function fmtTime(s, p) {
    const a = Math.abs(s);
    if (a === 0) return "0 s";
    if (a < 1e-6) return sig(s * 1e9, p) + " ns";
    if (a < 1e-3) return sig(s * 1e6, p) + " µs";
    if (a < 1) return sig(s * 1e3, p) + " ms";
    return sig(s, p) + " s";
  }
  function fmtCount(v) {
    if (!Number.isInteger(v)) return sig(v, 4);
    const s = String(Math.abs(v));
    return (v < 0 ? "-" : "") + (s.length > 4 && s.indexOf("e") < 0 ? s.replace(/\B(?=(\d{3})+$)/g, ",") : s);
  }
  function fmtPct(p) { return sig(p, p > 99.5 && p < 100 ? 5 : 3) + "%"; }
  function fmtBytes(b) {
    const a = Math.abs(b);
    if (a < 1e3) return sig(b, 4) + " B";
    if (a < 1e6) return sig(b / 1e3, 3) + " kB";
    if (a < 1e9) return sig(b / 1e6, 3) + " MB";
    return sig(b / 1e9, 3) + " GB";
  }
  const F = {
    s: v => fmtTime(v),
    ms: v => fmtTime(v / 1e3, 4),
    us: v => fmtTime(v / 1e6),
    ns: v => fmtTime(v / 1e9),
    frac: v => fmtPct(v * 100),
    pct: v => fmtPct(v),
    count: fmtCount,
    ratio: v => sig(v, 4) + "×",
    bytes: fmtBytes,
    gbs: v => sig(v, 3) + " GB/s",
    gflops: v => sig(v, 3) + " GFLOP/s",
    rate: v => sig(v, 3) + " /s",
    ai: v => sig(v, 3) + " flop/B",
    flops: v => sig(v, 3) + " flop",
    mhz: v => sig(v, 4) + " MHz",
    plain: v => sig(v, 4),
    dS: v => (v > 0 ? "+" : "") + fmtTime(v),
  };
  /* the formatter a member's name implies */
  function fmtOf(key) {
    const k = String(key).toLowerCase();
    if (/_ns$/.test(k)) return F.ns;
    if (/(_|^)ms$/.test(k)) return F.ms;
    if (/_us$/.test(k)) return F.us;
    if (/gb_per_s$|gbps$/.test(k)) return F.gbs;
    if (/gflop_per_s$|gflops$/.test(k)) return F.gflops;
    if (/per_s$/.test(k)) return F.rate;
    if (/(_|^)s$/.test(k)) return F.s;
    if (/fraction$|noise$|^rsd$|threshold$|allowance$|share$|^occupancy$/.test(k)) return F.frac;
    if (/percent/.test(k)) return F.pct;
    if (/flop_per_byte$|intensity$/.test(k)) return F.ai;
    if (/bytes/.test(k)) return F.bytes;
    if (/^flops/.test(k)) return F.flops;
    if (/(^|_)ratio($|_)|^ratio/.test(k)) return F.ratio;
    if (/mhz$/.test(k)) return F.mhz;
    return F.count;
  }
  /* a number from the data: <span data-k=PATH data-v=RAW>TEXT</span>; "—" for none */
  function num(path, v, f) {
    if (!isNum(v)) return h("span", { class: "none", title: "none" }, v === null || v === undefined ? "—" : String(v));
    const fm = typeof f === "function" ? f : fmtOf(f || String(path).replace(/\[\d+\]$/, "").split(".").pop());
    return h("span", { class: "n", "data-k": path, "data-v": String(v) }, fm(v));
  }
  /* an SVG text holding a number of the data */
  function svNum(path, v, f, a, tag) {
    const e = sv(tag || "text", a, f(v));
    if (path) { e.setAttribute("data-k", path); e.setAttribute("data-v", String(v)); }
    return e;
  }
  function get(o, path) {
    let v = o;
    for (const p of path.split(".")) { if (v == null) return undefined; v = v[p]; }
    return v;
  }
  /* an interval [lo, hi] of an array member */
  function interval(path, a, f) {
    if (!Array.isArray(a) || a.length < 2) return num(path, null);
    return h("span", { class: "ci" }, ["[", num(path + "[0]", a[0], f), ", ", num(path + "[1]", a[1], f), "]"]);
  }
  function dims(path, a, f, sep) {
    f = f || F.count;
    if (!Array.isArray(a)) return num(path, a, f);
    const out = h("span", { class: "dims" });
    a.forEach((v, i) => { if (i) add(out, sep || "×"); add(out, num(path + "[" + i + "]", v, f)); });
    return out;
  }

  /* ---- states that colour shows, always in words too --------------------------------------- */

  const STATE = {
    slower: ["▲", "slower"], faster: ["▼", "faster"], same: ["=", "same"], unsure: ["?", "unsure"],
    "only-in-a": ["◧", "only in A"], "only-in-b": ["◨", "only in B"], "not-judged": ["–", "not judged"],
    "under-minimum": ["·", "under minimum"], "n-too-small": ["·", "too few"], "no-verdict": ["–", "no verdict"],
  };
  function badge(state, text) {
    const s = String(state == null ? "none" : state).toLowerCase();
    const st = STATE[s];
    return h("span", { class: "badge st-" + s.replace(/[^a-z0-9-]/g, "") },
      st ? st[0] + " " + (text || st[1]) : text || String(state));
  }
  function kindBadge(kind) { return h("span", { class: "badge vk vk-" + String(kind).replace(/[^a-z0-9-]/g, "") }, String(kind)); }

  /* ---- sortable tables --------------------------------------------------------------------- */

  /* o: {cols: [{label, k (member path in a row), f, num, cell(row, i, path) → node, sort(row)}],
   *     rows, path (JSON path of the rows' array) or pathOf(i), slow {p75, p95}, cap, caption} */
  function table(o) {
    const rows = arr(o.rows), cols = o.cols;
    const pathOf = o.pathOf || (i => o.path + "[" + i + "]");
    const cap = o.cap || 200;
    let order = rows.map((_, i) => i), shown = Math.min(rows.length, cap), sortCol = -1, dir = 1;
    const built = new Array(rows.length);
    const tb = h("tbody");
    const ths = cols.map((c, ci) => h("th", {
      scope: "col", class: c.num === false ? null : "num", tabindex: "0", title: "sort by " + c.label,
      onclick: () => sortBy(ci), onkeydown: e => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(ci); } },
    }, [c.label, h("span", { class: "arrow" }, "")]));
    ths.forEach((t, i) => { if (cols[i].num === false) t.className = ""; });
    function mark(r) {
      const sl = o.slow;
      if (!sl || !isNum(r.total_s)) return null;
      if (isNum(sl.p95) && r.total_s >= sl.p95) return "p95";
      if (isNum(sl.p75) && r.total_s >= sl.p75) return "p75";
      return null;
    }
    function row(i) {
      if (built[i]) return built[i];
      const r = rows[i], p = pathOf(i), m = mark(r);
      const tr = h("tr", { class: m ? "slow-" + m : null });
      cols.forEach((c, ci) => {
        let v;
        if (c.cell) v = c.cell(r, i, p);
        else if (c.k) v = num(p + "." + c.k, get(r, c.k), c.f || c.k.split(".").pop());
        const td = h("td", { class: c.num === false ? "txt" : "num" }, v);
        if (ci === 0 && m) add(td, [" ", h("span", { class: "mark m-" + m, title: "total at or above the " + m + " of the table" }, m)]);
        tr.appendChild(td);
      });
      return (built[i] = tr);
    }
    function keyOf(c, r) {
      if (c.sort) return c.sort(r);
      if (c.k) return get(r, c.k);
      return null;
    }
    function sortBy(ci) {
      const c = cols[ci];
      dir = sortCol === ci ? -dir : (c.num === false ? 1 : -1);
      sortCol = ci;
      const keys = rows.map(r => keyOf(c, r));
      order = rows.map((_, i) => i).sort((a, b) => {
        const x = keys[a], y = keys[b];
        if (x == null && y == null) return a - b;
        if (x == null) return 1;
        if (y == null) return -1;
        const d = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
        return d ? d * dir : a - b;
      });
      ths.forEach((t, i) => {
        t.lastChild.textContent = i === ci ? (dir > 0 ? " ▲" : " ▼") : "";
        if (i === ci) t.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending"); else t.removeAttribute("aria-sort");
      });
      render();
    }
    const more = h("button", { class: "more", type: "button", onclick: () => { shown = rows.length; render(); } });
    /* the rows past the first `shown` wait in a hidden tbody (in the DOM, not laid out) */
    const rest = h("tbody", { hidden: true, class: "rest" });
    function render() {
      const fr = document.createDocumentFragment(), fr2 = document.createDocumentFragment();
      const all = Math.min(rows.length, Math.max(shown, 5000));
      for (let j = 0; j < shown; j++) fr.appendChild(row(order[j]));
      for (let j = shown; j < all; j++) fr2.appendChild(row(order[j]));
      tb.textContent = "";
      rest.textContent = "";
      tb.appendChild(fr);
      rest.appendChild(fr2);
      more.hidden = shown >= rows.length;
      more.textContent = "show all " + rows.length + " rows (" + (rows.length - shown) + " more)";
    }
    render();
    const t = h("table", { class: "tbl" }, [o.caption ? h("caption", null, o.caption) : null, h("thead", null, h("tr", null, ths)), tb, rest]);
    return h("div", { class: "tblwrap" }, [t, more]);
  }
  const C = {
    name: { label: "name", num: false, sort: r => r.name, cell: r => h("span", { class: "name", title: r.name }, r.name) },
  };
  function statCols(extra) {
    return [C.name, { label: "calls", k: "calls", f: F.count }, { label: "total", k: "total_s" },
      { label: "% of wall", k: "percent_of_wall", f: F.pct }, { label: "mean", k: "mean_s" },
      { label: "std", k: "std_s" }, { label: "min", k: "min_s" }, { label: "max", k: "max_s" }].concat(extra || []);
  }
  function statTable(rows, path, slow) {
    rows = arr(rows);
    const extra = [];
    for (const k of ["flops", "gflop_per_s", "bytes", "gb_per_s"])
      if (rows.some(r => isNum(r[k]))) extra.push({ label: words(k).replace("per s", "/s"), k });
    return table({ cols: statCols(extra), rows, path, slow });
  }

  /* ---- key/value blocks -------------------------------------------------------------------- */

  /* every scalar member of obj (numbers with data-k), but those in skip */
  function kv(obj, path, skip, fmts) {
    const dl = h("dl", { class: "kv" });
    if (!isObj(obj)) return dl;
    for (const k in obj) {
      if (skip && skip.indexOf(k) >= 0) continue;
      const v = obj[k];
      let dd;
      if (isNum(v)) dd = num(path + "." + k, v, (fmts && fmts[k]) || k);
      else if (typeof v === "string") dd = h("span", { class: "str" }, v);
      else if (typeof v === "boolean") dd = h("span", { class: "bool" }, v ? "yes" : "no");
      else if (Array.isArray(v) && v.length && v.every(isNum)) dd = dims(path + "." + k, v);
      else if (Array.isArray(v) && v.length && v.every(x => typeof x === "string")) dd = v.join(", ");
      else continue;
      add(dl, [h("dt", null, words(k)), h("dd", null, dd)]);
    }
    return dl;
  }
  function section(title, kids, id) {
    return h("section", { class: "sec", id }, [h("h2", null, title)].concat(kids));
  }
  function para(cls, text) { return h("p", { class: cls }, text); }

  /* ---- small SVG charts -------------------------------------------------------------------- */

  function niceTicks(lo, hi, n) {
    const span = hi - lo;
    if (!(span > 0)) return [lo];
    const s0 = span / (n || 5), mag = Math.pow(10, Math.floor(Math.log10(s0))), r = s0 / mag;
    const st = (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
    const out = [];
    for (let v = Math.ceil(lo / st - 1e-9) * st; v <= hi + st * 1e-9; v += st) out.push(Math.abs(v) < st * 1e-9 ? 0 : v);
    return out;
  }
  function logTicks(lo, hi) {
    const out = [], e0 = Math.floor(Math.log10(lo)), e1 = Math.ceil(Math.log10(hi));
    const ms = e1 - e0 > 4 ? [1] : [1, 2, 5];
    for (let e = e0; e <= e1; e++)
      for (const m of ms) { const v = m * Math.pow(10, e); if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v); }
    return out.length ? out : [lo, hi];
  }
  function range(vals, log, zero) {
    vals = vals.filter(v => isNum(v) && (!log || v > 0));
    if (!vals.length) return log ? [1, 10] : [0, 1];
    let lo = Math.min.apply(null, vals), hi = Math.max.apply(null, vals);
    if (log) { if (hi <= lo) { lo /= 2; hi *= 2; } return [lo / 1.25, hi * 1.25]; }
    if (zero && lo > 0) lo = 0;
    if (hi <= lo) { hi = lo + (Math.abs(lo) || 1); }
    const pad = (hi - lo) * 0.06;
    return [zero && lo === 0 ? 0 : lo - pad, hi + pad];
  }
  /* o: {w, h, title, x: {min, max, log, label, fmt, ticks}, y: {...}, y2?: {...}, draw(svg, X, Y, Y2)} */
  function chart(o) {
    const W = o.w || 640, H = o.h || 300, m = { l: 70, r: o.y2 ? 70 : 18, t: 14, b: 44 };
    const pw = W - m.l - m.r, ph = H - m.t - m.b;
    const scale = (ax, a, b) => {
      if (ax.log) { const l0 = Math.log(ax.min), l1 = Math.log(ax.max); return v => a + (Math.log(v) - l0) / (l1 - l0 || 1) * (b - a); }
      return v => a + (v - ax.min) / (ax.max - ax.min || 1) * (b - a);
    };
    const X = scale(o.x, m.l, m.l + pw), Y = scale(o.y, m.t + ph, m.t), Y2 = o.y2 ? scale(o.y2, m.t + ph, m.t) : null;
    const svg = sv("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, class: "chart", role: "img", "aria-label": o.title || "" });
    if (o.title) add(svg, sv("title", null, o.title));
    add(svg, sv("defs", null, sv("pattern", { id: "hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
      sv("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#E69F00", "stroke-width": 3 }))));
    const g = sv("g", { class: "axes" });
    const tx = o.x.ticks || (o.x.log ? logTicks(o.x.min, o.x.max) : niceTicks(o.x.min, o.x.max, 6));
    const ty = o.y.log ? logTicks(o.y.min, o.y.max) : niceTicks(o.y.min, o.y.max, 5);
    for (const v of tx) {
      const x = X(v);
      add(g, [sv("line", { x1: x, x2: x, y1: m.t, y2: m.t + ph, class: "grid" }),
        sv("text", { x, y: m.t + ph + 15, "text-anchor": "middle" }, (o.x.fmt || F.plain)(v))]);
    }
    for (const v of ty) {
      const y = Y(v);
      add(g, [sv("line", { x1: m.l, x2: m.l + pw, y1: y, y2: y, class: "grid" }),
        sv("text", { x: m.l - 5, y: y + 4, "text-anchor": "end" }, (o.y.fmt || F.plain)(v))]);
    }
    if (o.y2) {
      for (const v of niceTicks(o.y2.min, o.y2.max, 5))
        add(g, sv("text", { x: m.l + pw + 5, y: Y2(v) + 4, "text-anchor": "start" }, (o.y2.fmt || F.plain)(v)));
      add(g, sv("text", { x: W - 6, y: m.t + ph / 2, "text-anchor": "middle", transform: "rotate(-90 " + (W - 6) + " " + (m.t + ph / 2) + ")", class: "alabel" }, o.y2.label || ""));
    }
    add(g, [sv("rect", { x: m.l, y: m.t, width: pw, height: ph, class: "frame" }),
      sv("text", { x: m.l + pw / 2, y: H - 6, "text-anchor": "middle", class: "alabel" }, o.x.label || ""),
      sv("text", { x: 12, y: m.t + ph / 2, "text-anchor": "middle", transform: "rotate(-90 12 " + (m.t + ph / 2) + ")", class: "alabel" }, o.y.label || "")]);
    add(svg, g);
    const plot = sv("g", { class: "plot" });
    add(svg, plot);
    o.draw(plot, X, Y, Y2, { l: m.l, t: m.t, w: pw, h: ph });
    return h("div", { class: "chartwrap" }, svg);
  }
  const SHAPES = ["circle", "square", "triangle", "diamond", "cross"];
  const DASH = ["", "6 3", "2 3", "9 3 2 3", "4 4"];
  const PAL = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000", "#F0E442"];
  function marker(shape, x, y, r, a) {
    a = Object.assign({ class: "mk" }, a || {});
    if (shape === "square") return sv("rect", Object.assign({ x: x - r, y: y - r, width: 2 * r, height: 2 * r }, a));
    if (shape === "triangle") return sv("polygon", Object.assign({ points: [x, y - r * 1.2, x - r * 1.1, y + r * 0.8, x + r * 1.1, y + r * 0.8].join(" ") }, a));
    if (shape === "diamond") return sv("polygon", Object.assign({ points: [x, y - r * 1.3, x - r * 1.1, y, x, y + r * 1.3, x + r * 1.1, y].join(" ") }, a));
    if (shape === "star") {
      const p = [];
      for (let i = 0; i < 10; i++) { const rr = i % 2 ? r * 0.45 : r * 1.25, t = Math.PI / 5 * i - Math.PI / 2; p.push(x + rr * Math.cos(t), y + rr * Math.sin(t)); }
      return sv("polygon", Object.assign({ points: p.join(" ") }, a));
    }
    if (shape === "cross") return sv("path", Object.assign({ d: `M${x - r} ${y - r}L${x + r} ${y + r}M${x - r} ${y + r}L${x + r} ${y - r}`, "stroke-width": 2 }, a));
    return sv("circle", Object.assign({ cx: x, cy: y, r }, a));
  }
  function legend(items) { /* [{label, color, shape, dash, fill}] */
    return h("div", { class: "legend" }, items.map(it => {
      const s = sv("svg", { width: 34, height: 14, "aria-hidden": "true" }, [
        it.line !== false ? sv("line", { x1: 1, x2: 33, y1: 7, y2: 7, stroke: it.color, "stroke-width": 2, "stroke-dasharray": it.dash || "" }) : null,
        it.box ? sv("rect", { x: 4, y: 1, width: 26, height: 12, fill: it.box, stroke: it.color, "fill-opacity": it.opacity || 1 }) : null,
        it.shape ? marker(it.shape, 17, 7, 4, { fill: it.fill || it.color, stroke: it.color }) : null]);
      return h("span", { class: "li" }, [s, " ", it.label]);
    }));
  }

  /* ---- trace page -------------------------------------------------------------------------- */

  function tracePage(D, app) {
    const R = D.report || {};
    const P = "report";
    add(app, header(D, [
      h("dl", { class: "kv head" }, [
        h("dt", null, "trace"), h("dd", null, h("code", null, R.trace || "")),
        h("dt", null, "command"), h("dd", null, h("code", null, R.command || "")),
        h("dt", null, "wall"), h("dd", null, num(P + ".wall_s", R.wall_s)),
        h("dt", null, "events"), h("dd", null, num(P + ".events", R.events, F.count)),
        isNum(R.processes) ? [h("dt", null, "processes"), h("dd", null, num(P + ".processes", R.processes, F.count))] : null,
        isObj(R.job) && isNum(R.job.hosts) ? [h("dt", null, "hosts"), h("dd", null, num(P + ".job.hosts", R.job.hosts, F.count))] : null,
        isObj(R.job) && isNum(R.job.ranks_count) ? [h("dt", null, "ranks"), h("dd", null, num(P + ".job.ranks_count", R.job.ranks_count, F.count))] : null,
        isObj(R.job) && R.job.launcher ? [h("dt", null, "launcher"), h("dd", null, String(R.job.launcher))] : null,
        h("dt", null, "host API time"), h("dd", null, num(P + ".host_api_s", R.host_api_s)),
        h("dt", null, "GPU busy"), h("dd", null, num(P + ".gpu_busy_s", R.gpu_busy_s)),
      ].flat()),
      completeness(R, P),
      arr(R.notes).length ? h("ul", { class: "notes" }, arr(R.notes).map(n => h("li", null, typeof n === "string" ? n : JSON.stringify(n)))) : null,
    ]));
    if (isObj(R.verdict)) add(app, verdicts(R.verdict, P + ".verdict"));
    if (isObj(R.job)) add(app, jobSection(R.job, P + ".job"));
    if (isObj(D.timeline)) add(app, section("Timeline", [timeline(D.timeline, "timeline")], "timeline"));
    const sl = D.slow || {};
    const tables = [];
    if (arr(R.host).length || R.host) tables.push(h("h3", null, "Host API calls"), arr(R.host).length ? statTable(R.host, P + ".host", sl.host) : para("empty", "none"));
    if (arr(R.device).length || R.device) tables.push(h("h3", null, "Device work"), arr(R.device).length ? statTable(R.device, P + ".device", sl.device) : para("empty", "none"));
    if (arr(R.nvtx).length) tables.push(h("h3", null, "NVTX ranges"), statTable(R.nvtx, P + ".nvtx", sl.nvtx));
    if (arr(R.collectives).length) tables.push(h("h3", null, "Collectives"), statTable(R.collectives, P + ".collectives", null));
    tables.push(para("hint", "Click a column heading to sort. Rows marked p95 (red) have a total at or above the table's 95th percentile, p75 (yellow) at or above its 75th."));
    add(app, section("Tables", tables, "tables"));
    if (isObj(R.launch_latency)) add(app, latencySection(R.launch_latency, P + ".launch_latency"));
    if (isObj(D.tree)) add(app, treeSection(D.tree, "tree"));
    if (arr(D.hist).length) add(app, histSection(D.hist, "hist"));
  }

  function header(D, kids) {
    return h("header", { class: "top" }, [h("h1", null, D.title || "kprof"),
      h("p", { class: "producer" }, (D.producer || "kprof") + " · offline page")].concat(kids));
  }
  function completeness(R, P) {
    const c = R.completeness;
    const items = [];
    if (isNum(R.dropped)) items.push(["dropped", P + ".dropped", R.dropped]);
    if (isObj(c)) for (const k in c) if (isNum(c[k])) items.push([words(k), P + ".completeness." + k, c[k]]);
    if (!items.length) return null;
    const bad = items.some(it => it[2] > 0);
    return h("div", { class: "complete " + (bad ? "incomplete" : "ok") }, [
      h("strong", null, bad ? "⚠ incomplete: " : "✓ complete: "),
      items.map((it, i) => h("span", { class: "ci-item" + (it[2] > 0 ? " bad" : "") }, [i ? " · " : "", it[0] + " ", num(it[1], it[2], F.count)])),
    ]);
  }

  const VSKIP = ["window", "api", "kind", "sentence", "active", "ranges", "longest_gap", "largest_host_calls",
    "flags", "advice", "named_call", "instance_kinds", "name", "instances"];
  function verdictBlock(v, path, title) {
    const flags = isObj(v.flags) ? Object.keys(v.flags).filter(k => v.flags[k] === true) : [];
    const lg = isObj(v.longest_gap) ? v.longest_gap : null;
    return h("div", { class: "verdict" }, [
      h("h3", null, [title + " ", kindBadge(v.kind || "unknown"),
        isNum(v.instances) ? [" over ", num(path + ".instances", v.instances, F.count), " instances"] : null,
        arr(v.api).length ? h("span", { class: "api" }, " (" + v.api.join(", ") + ")") : null].flat()),
      v.sentence ? para("sentence", v.sentence) : null,
      isObj(v.instance_kinds) ? h("p", { class: "ik" }, ["instances: "].concat(Object.keys(v.instance_kinds).map((k, i) =>
        [i ? ", " : "", k + " ", num(path + ".instance_kinds." + k, v.instance_kinds[k], F.count)]).flat())) : null,
      kv(v, path, VSKIP),
      lg ? h("p", { class: "lg" }, ["longest idle stretch: ", num(path + ".longest_gap_s", v.longest_gap_s), " ",
        lg.text || lg.place || "", isNum(lg.at_s) ? [", at ", num(path + ".longest_gap.at_s", lg.at_s)] : null].flat()) : null,
      arr(v.largest_host_calls).length ? h("p", { class: "lhc" }, ["largest host calls: "].concat(v.largest_host_calls.map((c, i) => {
        const p = path + ".largest_host_calls[" + i + "]";
        return [i ? "; " : "", c.name + " ", num(p + ".total_s", c.total_s), " (", num(p + ".calls", c.calls, F.count), " calls, ",
          num(p + ".fraction", c.fraction, F.frac), ")"];
      }).flat())) : null,
      v.named_call ? para("nc", "named call: " + (typeof v.named_call === "string" ? v.named_call : JSON.stringify(v.named_call))) : null,
      flags.length ? para("flags", "flags: " + flags.map(words).join(", ")) : null,
      arr(v.advice).length ? para("advice", "advice: " + v.advice.map(words).join(", ")) : null,
    ]);
  }
  function verdicts(v, path) {
    const kids = [verdictBlock(v, path, "Over the " + (v.window || "wall") + ":")];
    if (isObj(v.active)) kids.push(verdictBlock(v.active, path + ".active", "Active window:"));
    arr(v.ranges).forEach((r, i) => kids.push(verdictBlock(r, path + ".ranges[" + i + "]", "NVTX range “" + (r.name || "?") + "”:")));
    return section("Verdict", kids, "verdict");
  }
  function jobSection(J, path) {
    const kids = [kv(J, path, ["ranks", "devices", "stragglers"])];
    if (arr(J.ranks).length) {
      kids.push(h("h3", null, "Ranks"), table({
        path: path + ".ranks", rows: J.ranks, cols: [
          { label: "rank", num: false, sort: r => r.rank, cell: (r, i, p) => isNum(r.rank) ? num(p + ".rank", r.rank, F.count) : "launcher" },
          { label: "host", num: false, sort: r => r.host, cell: r => r.host || "" },
          { label: "pids", num: false, cell: (r, i, p) => dims(p + ".pids", arr(r.pids), String, ", ") },
          { label: "GPUs", num: false, cell: (r, i, p) => dims(p + ".gpus", arr(r.gpus), String, ", ") },
          { label: "kernels", k: "kernels" }, { label: "collectives", k: "collectives" }, { label: "copies", k: "copies" },
          { label: "GPU busy", k: "gpu_busy_s" }, { label: "collective", k: "collective_s" }, { label: "host API", k: "host_api_s" },
          { label: "start", k: "start_s" }, { label: "span", k: "span_s" }, { label: "last at steps", k: "last_at_steps" }],
      }));
    }
    if (arr(J.devices).length) {
      kids.push(h("h3", null, "Devices"), table({
        path: path + ".devices", rows: J.devices, cols: [
          { label: "host", num: false, sort: r => r.host, cell: r => r.host || "" }, { label: "device", k: "device" },
          { label: "kernels", k: "kernels" }, { label: "collectives", k: "collectives" }, { label: "copies", k: "copies" },
          { label: "GPU busy", k: "gpu_busy_s" }, { label: "% of wall", k: "gpu_busy_percent_of_wall" },
          { label: "collective", k: "collective_s" }, { label: "ranks", num: false, cell: (r, i, p) => dims(p + ".ranks", arr(r.ranks), String, ", ") }],
      }));
    }
    if (isObj(J.stragglers)) {
      const S = J.stragglers;
      kids.push(h("h3", null, "Stragglers"), kv(S, path + ".stragglers", ["detail"]));
      if (arr(S.detail).length) kids.push(table({
        path: path + ".stragglers.detail", rows: S.detail, cap: 200, cols: [
          { label: "step", k: "index" }, { label: "collective", num: false, sort: r => r.name, cell: r => h("span", { class: "name" }, r.name || "") },
          { label: "at", k: "at_s" }, { label: "last rank", k: "last_rank" }, { label: "wait", k: "wait_s" }, { label: "timed", k: "timed_s" },
          { label: "waits", num: false, cell: (r, i, p) => arr(r.waits).map((w, j) => [j ? ", " : "", "rank " + w.rank + " ", num(p + ".waits[" + j + "].wait_s", w.wait_s)]).flat() }],
      }));
    }
    return section("Job", kids, "job");
  }
  function latencySection(L, path) {
    const keys = Object.keys(L).filter(k => isObj(L[k]));
    const cols = [{ label: "measure", num: false, sort: r => r.k, cell: r => words(r.k) }];
    for (const k of ["count", "median_s", "p95_s", "mean_s", "min_s", "max_s"])
      if (keys.some(x => isNum(L[x][k]))) cols.push({ label: words(k.replace(/_s$/, "")), sort: r => r.o[k], cell: (r, i) => num(path + "." + r.k + "." + k, r.o[k], k) });
    return section("Launch latency", [table({ rows: keys.map(k => ({ k, o: L[k] })), pathOf: i => path + "." + keys[i], cols }),
      para("hint", "launch to start: from the call's start to its device work's start.")], "latency");
  }

  /* the call tree: child rows are built only when their parent opens; a node shows its first
   * LIM children and a row to show the rest; it starts open to depth 2 (while that stays under
   * ~BUDGET rows: a tree of thousands of nodes opens on click) */
  function treeSection(T, path) {
    const nodes = arr(T.nodes), LIM = 100, BUDGET = 400;
    const kids = new Map(), byId = new Map();
    nodes.forEach((n, i) => { byId.set(n.id, i); const p = n.parent || 0; if (!kids.has(p)) kids.set(p, []); kids.get(p).push(i); });
    /* roots whose parent is not a node: show them at the top too */
    for (const [p, list] of Array.from(kids)) if (p !== 0 && !byId.has(p)) kids.set(0, (kids.get(0) || []).concat(list));
    const open = new Uint8Array(nodes.length), rowOf = new Array(nodes.length), lim = new Map();
    const tb = h("tbody");
    const COLS = [["calls", "calls", F.count], ["inclusive", "inclusive_s"], ["exclusive", "exclusive_s"], ["GPU", "gpu_s"], ["device ops", "device_ops", F.count]];
    const depthOf = i => i < 0 ? 0 : Math.max(1, nodes[i].depth || 1);
    const kidsOf = i => kids.get(i < 0 ? 0 : nodes[i].id) || [];
    function row(i) {
      if (rowOf[i]) return rowOf[i];
      const n = nodes[i], p = path + ".nodes[" + i + "]", has = kids.has(n.id);
      const btn = has ? h("button", { class: "tog", type: "button", "aria-expanded": "false", "aria-label": "open" }, "▸") : h("span", { class: "tog leaf" }, "·");
      const tr = h("tr", null, [
        h("td", { class: "txt tname", style: "padding-left:" + (4 + 14 * (depthOf(i) - 1)) + "px" }, [btn, " ",
          h("span", { class: "tk tk-" + (n.kind || "") }, n.kind || ""), " ", h("span", { class: "name", title: arr(n.path).join(" › ") || n.name }, n.name || ""),
          n.children_not_shown ? h("span", { class: "cns" }, [" (+", num(p + ".children_not_shown", n.children_not_shown, F.count), " not shown)"]) : null]),
      ].concat(COLS.map(c => h("td", { class: "num" }, num(p + "." + c[1], n[c[1]], c[2] || c[1])))));
      tr._d = depthOf(i);
      if (has) btn.addEventListener("click", () => toggle(i));
      return (rowOf[i] = tr);
    }
    function rowsUnder(i, fr) { /* the rows shown under an open node (i = -1: the root) */
      const list = kidsOf(i), m = Math.min(list.length, lim.get(i) || LIM);
      for (let j = 0; j < m; j++) { const c = list[j]; fr.appendChild(row(c)); if (open[c]) rowsUnder(c, fr); }
      if (m < list.length) {
        const tr = h("tr", { class: "more-row" }, h("td", { colspan: 1 + COLS.length, style: "padding-left:" + (4 + 14 * depthOf(i)) + "px" },
          h("button", { type: "button", class: "more" }, "show " + (list.length - m) + " more of " + list.length)));
        tr._d = depthOf(i) + 1;
        tr.querySelector("button").addEventListener("click", () => {
          lim.set(i, list.length);
          const fr2 = document.createDocumentFragment();
          for (let j = m; j < list.length; j++) { const c = list[j]; fr2.appendChild(row(c)); if (open[c]) rowsUnder(c, fr2); }
          tb.replaceChild(fr2, tr);
        });
        fr.appendChild(tr);
      }
    }
    function setOpen(i, o) {
      open[i] = o ? 1 : 0;
      const b = row(i).firstChild.firstChild;
      if (b.tagName === "BUTTON") { b.textContent = o ? "▾" : "▸"; b.setAttribute("aria-expanded", o ? "true" : "false"); b.setAttribute("aria-label", o ? "close" : "open"); }
    }
    function toggle(i) {
      const tr = row(i), d = tr._d;
      if (open[i]) {
        while (tr.nextSibling && tr.nextSibling._d > d) tb.removeChild(tr.nextSibling);
        setOpen(i, false);
      } else {
        setOpen(i, true);
        const fr = document.createDocumentFragment();
        rowsUnder(i, fr);
        tb.insertBefore(fr, tr.nextSibling);
      }
    }
    function renderAll() {
      const fr = document.createDocumentFragment();
      rowsUnder(-1, fr);
      tb.textContent = "";
      tb.appendChild(fr);
    }
    let shown = Math.min(kidsOf(-1).length, LIM), closedSome = false;
    for (const c of kidsOf(-1).slice(0, LIM)) {
      if (!kids.has(nodes[c].id)) continue;
      const add1 = Math.min(kidsOf(c).length, LIM);
      if (shown + add1 > BUDGET) { closedSome = true; continue; }
      shown += add1;
      setOpen(c, true);
    }
    renderAll();
    const all = o => { nodes.forEach((n, i) => { if (kids.has(n.id)) setOpen(i, o); }); renderAll(); };
    const tools = h("div", { class: "tools" }, [
      h("button", { type: "button", onclick: () => all(true) }, "open all"),
      h("button", { type: "button", onclick: () => all(false) }, "close all"),
    ]);
    const tot = isObj(T.totals) ? kv(T.totals, path + ".totals") : null;
    return section("Call tree", [tot, tools, closedSome ? para("hint", "A large tree: some top-level nodes start closed; ▸ opens one.") : null,
      h("div", { class: "tblwrap" }, h("table", { class: "tbl tree" }, [
        h("thead", null, h("tr", null, [h("th", null, "call path")].concat(COLS.map(c => h("th", { class: "num" }, c[0]))))), tb]))], "tree");
  }

  function histSection(H, path) {
    return section("Kernel durations", [h("div", { class: "hists" }, H.map((x, i) => {
      const p = path + "[" + i + "]", e = arr(x.edges_s), c = arr(x.counts);
      if (e.length < 2 || !c.length) return null;
      const W = 330, Hh = 130, l = 36, b = 22, t = 6, pw = W - l - 8, ph = Hh - t - b;
      const lo = e[0], hi = e[e.length - 1], lg = lo > 0 && hi / lo > 1.01;
      const X = lg ? v => l + Math.log(v / lo) / Math.log(hi / lo) * pw : v => l + (v - lo) / (hi - lo || 1) * pw;
      const cm = Math.max.apply(null, c.concat([1]));
      const svg = sv("svg", { viewBox: "0 0 " + W + " " + Hh, width: W, height: Hh, class: "chart hist", role: "img", "aria-label": "durations of " + x.name });
      add(svg, [sv("rect", { x: l, y: t, width: pw, height: ph, class: "frame" }),
        sv("text", { x: l - 4, y: t + 9, "text-anchor": "end" }, fmtCount(cm)), sv("text", { x: l - 4, y: t + ph, "text-anchor": "end" }, "0")]);
      c.forEach((n, j) => {
        if (!n) return;
        const x0 = X(e[j]), x1 = Math.max(X(e[j + 1]), x0 + 1), hh = n / cm * ph;
        add(svg, sv("rect", { x: x0, y: t + ph - hh, width: x1 - x0, height: hh, class: "bar" },
          sv("title", null, fmtTime(e[j]) + " – " + fmtTime(e[j + 1]) + ": " + n)));
      });
      add(svg, [svNum(p + ".edges_s[0]", lo, F.s, { x: l, y: Hh - 6, "text-anchor": "start" }),
        svNum(p + ".edges_s[" + (e.length - 1) + "]", hi, F.s, { x: l + pw, y: Hh - 6, "text-anchor": "end" }),
        sv("text", { x: l + pw / 2, y: Hh - 6, "text-anchor": "middle" }, lg ? "(log time)" : "")]);
      return h("figure", { class: "hist" }, [svg, h("figcaption", null, [h("span", { class: "name" }, x.name), " · ", num(p + ".count", x.count, F.count), " instances"])]);
    }))], "hist");
  }

  /* ---- the timeline ------------------------------------------------------------------------ */

  const KCOL = { api: "#56B4E9", sync: "#D55E00", range: "#CC79A7", mark: "#000000", overhead: "#999999", memcpy: "#F0E442", memset: "#D9D9D9" };
  const KERNEL_PAL = ["#E69F00", "#009E73", "#0072B2", "#D55E00", "#56B4E9"];
  const DARK = { "#0072B2": 1, "#000000": 1 };
  function hash(s) { let x = 2166136261; for (let i = 0; i < s.length; i++) x = Math.imul(x ^ s.charCodeAt(i), 16777619); return x >>> 0; }

  function timeline(TL, path) {
    const tracks = arr(TL.tracks), names = arr(TL.names), kinds = arr(TL.kinds);
    const nT = tracks.length, span = isNum(TL.span_ns) && TL.span_ns > 0 ? TL.span_ns : 1;
    const dec = !!TL.decimated && arr(TL.summary).length >= 0 && !TL.slices;
    const S = TL.slices || null;
    const wrap = h("div", { class: "tl" });
    /* lanes[t][d]: the slices (or summary bins) of track t at depth d */
    const lanes = tracks.map(() => []);
    let start = null, n = 0;
    const col = name => S && Array.isArray(S[name]) ? S[name] : [];
    const sT = col("track"), sK = col("kind"), sN = col("name"), sD = col("dur"), sDp = col("depth"), sF = col("flow"), sG = col("geom"), sL = col("latency");
    if (S && !dec) {
      n = col("start").length;
      start = new Float64Array(n);
      let acc = 0;
      const st = S.start;
      for (let i = 0; i < n; i++) { acc += st[i]; start[i] = acc; }
      const tmp = tracks.map(() => []);
      for (let i = 0; i < n; i++) {
        const t = sT[i], d = sDp[i] > 0 ? sDp[i] : 0;
        if (!(t >= 0 && t < nT)) continue;
        const L = tmp[t];
        while (L.length <= d) L.push([]);
        L[d].push(i);
      }
      tmp.forEach((L, t) => {
        lanes[t] = L.map(ix => {
          const m = ix.length, idx = Int32Array.from(ix), s0 = new Float64Array(m), me = new Float64Array(m);
          let mx = -Infinity;
          for (let j = 0; j < m; j++) { const i = idx[j]; s0[j] = start[i]; mx = Math.max(mx, start[i] + (sD[i] || 0)); me[j] = mx; }
          return { idx, s0, me };
        });
      });
    } else if (dec) {
      arr(TL.summary).forEach((s, si) => {
        const t = s.track, d = s.depth > 0 ? s.depth : 0;
        if (!(t >= 0 && t < nT)) return;
        const L = lanes[t];
        while (L.length <= d) L.push(null);
        L[d] = { sum: s, si };
      });
    }
    const binNs = isNum(TL.bin_ns) && TL.bin_ns > 0 ? TL.bin_ns : span / (TL.bins || 1);
    const kindName = i => kinds[i] || "api";
    const nameOf = i => names[i] != null ? String(names[i]) : "?";
    const kcol = new Map();
    function colorOf(k, nm) {
      if (k !== "kernel" && KCOL[k]) return KCOL[k];
      let c = kcol.get(nm);
      if (!c) { c = KERNEL_PAL[hash(nameOf(nm)) % KERNEL_PAL.length]; kcol.set(nm, c); }
      return c;
    }

    /* groups and layout */
    const groups = [], gmap = new Map();
    tracks.forEach((t, i) => {
      const gname = t.group != null ? String(t.group) : "";
      let g = gmap.get(gname);
      if (!g) { g = { name: gname, tracks: [], closed: false }; gmap.set(gname, g); groups.push(g); }
      g.tracks.push(i);
    });
    const AXIS = 24, GH = 20, ROW = 17, LABEL = 190;
    let rows = [], totalH = 0;
    const trackY = new Float64Array(nT);
    function layout() {
      rows = [];
      let y = 0;
      for (const g of groups) {
        rows.push({ g, y, h: GH });
        y += GH;
        for (const t of g.tracks) {
          if (g.closed) { trackY[t] = -1; continue; }
          const hh = Math.max(1, lanes[t].length) * ROW + 4;
          trackY[t] = y;
          rows.push({ t, y, h: hh });
          y += hh;
        }
      }
      totalH = y;
    }
    layout();

    /* DOM */
    const info = h("div", { class: "tl-info" });
    add(info, [num(path + ".events", TL.events, F.count), " events on ", String(nT), " tracks over ", num(path + ".span_ns", TL.span_ns, F.ns), "."]);
    if (dec) {
      add(wrap, h("div", { class: "notice", role: "note" }, [h("strong", null, "⚠ Decimated timeline: "),
        num(path + ".events", TL.events, F.count), " slices (more than the page's limit of ", num(path + ".slices_limit", TL.slices_limit, F.count),
        ") summarised into ", num(path + ".bins", TL.bins, F.count), " bins of ", num(path + ".bin_ns", TL.bin_ns, F.ns),
        " per track and depth; each bin shows the busy share (darker = busier) and the name with the most time in it. ",
        h("code", null, "kprof export FILE --perfetto"), " writes every slice."]));
    }
    const tools = h("div", { class: "tl-tools" });
    const scroller = h("div", { class: "tl-scroll", tabindex: "0", "aria-label": "timeline: wheel zooms, drag pans, W/S zoom, A/D pan, 0 resets" });
    const inner = h("div", { class: "tl-inner" });
    const cv = h("canvas", { class: "tl-canvas", role: "img", "aria-label": "timeline of " + nT + " tracks; the tables below hold its numbers" });
    add(inner, cv);
    add(scroller, inner);
    const tip = h("div", { class: "tl-tip", hidden: true });
    const panel = h("div", { class: "tl-panel" }, para("hint", "Click a slice to see its arguments."));
    const legendItems = [];
    if (!dec) {
      for (const k of ["api", "kernel", "memcpy", "memset", "sync", "range", "mark", "overhead"])
        if (kinds.indexOf(k) >= 0) legendItems.push(h("span", { class: "li" }, [h("span", { class: "sw sw-" + k, style: "background:" + (k === "kernel" ? "#E69F00" : KCOL[k]) }), " " + k +
          (k === "kernel" ? " (colour by name)" : k === "memcpy" ? " (hatched)" : k === "memset" ? " (dotted)" : k === "sync" ? " (cross-hatched)" : k === "range" ? " (outlined)" : k === "mark" ? " (▼)" : "")]));
    }
    add(wrap, [info, tools, scroller, h("div", { class: "legend" }, legendItems),
      para("hint keys", "Wheel: zoom at the cursor · drag: pan · W/S or +/− or ↑/↓: zoom · A/D or ←/→: pan · 0 or Home: reset · hover: name, start, duration and the launch arrow · click: arguments · click a group heading to fold it."),
      panel, tip]);
    const ctx = cv.getContext("2d");

    /* view: [v0, v1] ns from t0 */
    let v0 = 0, v1 = 0;
    function reset() { const pad = span * 0.01; v0 = -pad; v1 = span + pad; }
    reset();
    let W = 0, H = 0, dpr = 1, raf = 0, hover = null, sel = null, mouse = null;
    function plotW() { return Math.max(10, W - LABEL); }
    const kx = () => plotW() / (v1 - v0);
    const xOf = t => LABEL + (t - v0) * kx();
    const tOf = x => v0 + (x - LABEL) / kx();
    function size() {
      dpr = window.devicePixelRatio || 1;
      W = Math.max(300, scroller.clientWidth || 900);
      const maxH = Math.max(200, Math.round((window.innerHeight || 800) * 0.7));
      H = Math.min(AXIS + totalH, maxH);
      scroller.style.height = H + "px";
      inner.style.height = AXIS + totalH + "px";
      cv.style.width = W + "px";
      cv.style.height = H + "px";
      cv.width = Math.round(W * dpr);
      cv.height = Math.round(H * dpr);
    }
    function redraw() { if (!raf) raf = requestAnimationFrame(draw); }

    const pats = {};
    function pattern(kind) {
      if (kind in pats) return pats[kind];
      const c = document.createElement("canvas");
      c.width = c.height = 6;
      const g = c.getContext("2d");
      g.strokeStyle = "rgba(0,0,0,0.45)";
      g.fillStyle = "rgba(0,0,0,0.45)";
      g.lineWidth = 1;
      if (kind === "memcpy") { g.beginPath(); g.moveTo(0, 6); g.lineTo(6, 0); g.stroke(); }
      else if (kind === "memset") { g.fillRect(1, 1, 1.5, 1.5); g.fillRect(4, 4, 1.5, 1.5); }
      else if (kind === "sync") { g.beginPath(); g.moveTo(0, 6); g.lineTo(6, 0); g.moveTo(0, 0); g.lineTo(6, 6); g.stroke(); }
      else { pats[kind] = null; return null; }
      return (pats[kind] = ctx.createPattern(c, "repeat"));
    }
    function lb(a, x, lo) { let hi = a.length; lo = lo || 0; while (lo < hi) { const m = (lo + hi) >> 1; if (a[m] < x) lo = m + 1; else hi = m; } return lo; }
    function laneY(t, d) { return AXIS + trackY[t] + 2 + d * ROW - scroller.scrollTop; }

    function drawSlice(i, x0, x1, y, k) {
      const w = x1 - x0, c = colorOf(k, sN[i]);
      if (k === "mark") {
        ctx.fillStyle = "#000";
        ctx.beginPath(); ctx.moveTo(x0 - 4, y + 1); ctx.lineTo(x0 + 4, y + 1); ctx.lineTo(x0, y + 9); ctx.closePath(); ctx.fill();
        return;
      }
      if (k === "range") {
        ctx.fillStyle = "rgba(204,121,167,0.35)";
        ctx.fillRect(x0, y, w, ROW - 2);
        if (w > 2) { ctx.strokeStyle = "#8E3D6E"; ctx.lineWidth = 1; ctx.strokeRect(x0 + 0.5, y + 0.5, w - 1, ROW - 3); }
      } else {
        ctx.fillStyle = c;
        ctx.fillRect(x0, y, w, ROW - 2);
        const p = w > 3 ? pattern(k) : null;
        if (p) { ctx.fillStyle = p; ctx.fillRect(x0, y, w, ROW - 2); }
      }
      if (w > 28) {
        const nm = nameOf(sN[i]);
        const tx = Math.max(x0, LABEL) + 3, avail = Math.min(x1, W) - tx - 2;
        if (avail > 12) {
          ctx.fillStyle = DARK[c] && k !== "range" ? "#fff" : "#000";
          let s = nm;
          if (ctx.measureText(s).width > avail) {
            let lo = 0, hi = s.length;
            while (lo < hi) { const m = (lo + hi + 1) >> 1; if (ctx.measureText(s.slice(0, m) + "…").width <= avail) lo = m; else hi = m - 1; }
            s = lo ? s.slice(0, lo) + "…" : "";
          }
          if (s) ctx.fillText(s, tx, y + ROW - 5);
        }
      }
    }
    function drawLane(L, t, d, y) {
      const k = kx(), px = 1 / k;
      if (L.sum) return drawBins(L, y);
      const { idx, s0, me } = L, m = idx.length;
      let j = lb(me, v0);
      let lastPx = -1e9;
      while (j < m) {
        const i = idx[j], st = s0[j];
        if (st > v1) break;
        const du = sD[i] || 0, kd = kindName(sK[i]);
        let x0 = LABEL + (st - v0) * k, x1 = LABEL + (st + du - v0) * k;
        if (x1 - x0 < 1 && kd !== "mark") {
          const p = Math.floor(x0);
          if (p <= lastPx) { /* this pixel is drawn: jump to the next one */
            const nx = lb(s0, v0 + (lastPx + 1 - LABEL) * px, j + 1);
            if (nx - 1 > j && s0[nx - 1] + (sD[idx[nx - 1]] || 0) > v0 + (lastPx + 1 - LABEL) * px) j = nx - 1 > j ? nx - 1 : nx;
            else j = nx;
            if (j === nx - 1) { /* a long slice starting inside the drawn pixel */
              const ii = idx[j];
              drawSlice(ii, lastPx + 1, LABEL + (s0[j] + (sD[ii] || 0) - v0) * k, y, kindName(sK[ii]));
              lastPx = Math.floor(LABEL + (s0[j] + (sD[ii] || 0) - v0) * k);
              j++;
            }
            continue;
          }
          x0 = p; x1 = p + 1; lastPx = p;
        } else lastPx = Math.max(lastPx, Math.floor(x1) - 1);
        if (x0 < LABEL - 2) x0 = LABEL - 2;
        if (x1 > W + 2) x1 = W + 2;
        drawSlice(i, x0, x1, y, kd);
        j++;
      }
    }
    function drawBins(L, y) { /* every listed bin at least 1 px; bins sharing a pixel: the busiest */
      const s = L.sum, bins = arr(s.bin), busy = arr(s.busy), nm = arr(s.name), k = kx(), w = Math.max(1, binNs * k);
      let j = lb(bins, Math.floor(v0 / binNs)), px = -1e9, pf = 0, pn = 0;
      const flush = () => {
        if (px < -1e8) return;
        ctx.globalAlpha = 0.25 + 0.75 * pf;
        ctx.fillStyle = colorOf("kernel", pn);
        ctx.fillRect(px, y, 1, ROW - 2);
      };
      for (; j < bins.length; j++) {
        const b = bins[j], t = b * binNs;
        if (t > v1) break;
        const x0 = LABEL + (t - v0) * k, f = Math.min(1, Math.max(0, (busy[j] || 0) / binNs));
        if (w < 2) { /* narrow: merge per pixel */
          const p = Math.floor(x0);
          if (p !== px) { flush(); px = p; pf = f; pn = nm[j]; } else if (f > pf) { pf = f; pn = nm[j]; }
          continue;
        }
        ctx.globalAlpha = 0.25 + 0.75 * f;
        ctx.fillStyle = colorOf("kernel", nm[j]);
        ctx.fillRect(Math.max(x0, LABEL - 1), y, w, ROW - 2);
        ctx.globalAlpha = 1;
        if (w > 40) {
          ctx.fillStyle = "#000";
          ctx.save(); ctx.beginPath(); ctx.rect(x0, y, w, ROW); ctx.clip();
          ctx.fillText(nameOf(nm[j]) + " " + Math.round(f * 100) + "%", Math.max(x0, LABEL) + 3, y + ROW - 5);
          ctx.restore();
        }
      }
      flush();
      ctx.globalAlpha = 1;
    }
    function tickStep(ns) {
      const target = ns / 8, mag = Math.pow(10, Math.floor(Math.log10(target))), r = target / mag;
      return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
    }
    function draw() {
      raf = 0;
      /* what is drawn, for tests and scripts: the view (ns from t0), the slice under the mouse,
       * the selected one, the launch arrow (call>device op) */
      wrap.dataset.view = v0 + "," + v1;
      wrap.dataset.hover = hover && hover.i != null ? String(hover.i) : "";
      wrap.dataset.selected = sel && sel.i != null ? String(sel.i) : "";
      wrap.dataset.arrow = "";
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.fillStyle = "#fff";
      ctx.fillRect(0, 0, W, H);
      ctx.font = "11px sans-serif";
      ctx.textBaseline = "alphabetic";
      const sy = scroller.scrollTop;
      /* rows */
      let stripe = 0;
      for (const r of rows) {
        const y = AXIS + r.y - sy;
        if (r.t == null) stripe = 0;
        if (y + r.h < AXIS || y > H) { if (r.t != null) stripe++; continue; }
        if (r.t == null) {
          ctx.fillStyle = "#E8E8E8"; ctx.fillRect(0, y, W, r.h);
          ctx.fillStyle = "#000"; ctx.font = "bold 12px sans-serif";
          ctx.fillText((r.g.closed ? "▸ " : "▾ ") + r.g.name + (r.g.closed ? "  (" + r.g.tracks.length + " tracks folded)" : ""), 6, y + 14);
          ctx.font = "11px sans-serif";
          continue;
        }
        ctx.fillStyle = stripe++ % 2 ? "#F6F6F6" : "#FFFFFF";
        ctx.fillRect(LABEL, y, W - LABEL, r.h);
        ctx.save();
        ctx.beginPath(); ctx.rect(LABEL, Math.max(y, AXIS), W - LABEL, r.h); ctx.clip();
        lanes[r.t].forEach((L, d) => { if (L) drawLane(L, r.t, d, y + 2 + d * ROW); });
        ctx.restore();
        ctx.strokeStyle = "#DDD"; ctx.beginPath(); ctx.moveTo(0, y + r.h - 0.5); ctx.lineTo(W, y + r.h - 0.5); ctx.stroke();
      }
      /* labels over the left column */
      ctx.save(); ctx.beginPath(); ctx.rect(0, AXIS, LABEL, H - AXIS); ctx.clip();
      for (const r of rows) {
        if (r.t == null) continue;
        const y = AXIS + r.y - sy;
        if (y + r.h < AXIS || y > H) continue;
        ctx.fillStyle = "#FAFAFA"; ctx.fillRect(0, y, LABEL - 1, r.h - 1);
        ctx.fillStyle = "#000";
        const tr = tracks[r.t];
        ctx.fillText(fit(String(tr.name != null ? tr.name : r.t), LABEL - 16), 12, y + 13);
        ctx.fillStyle = "#555";
        if (r.h > 30) ctx.fillText(tr.kind || "", 12, y + 26);
        ctx.strokeStyle = "#999"; ctx.beginPath(); ctx.moveTo(LABEL - 0.5, y); ctx.lineTo(LABEL - 0.5, y + r.h); ctx.stroke();
      }
      ctx.restore();
      /* the time axis */
      ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, W, AXIS);
      ctx.strokeStyle = "#444"; ctx.beginPath(); ctx.moveTo(0, AXIS - 0.5); ctx.lineTo(W, AXIS - 0.5); ctx.stroke();
      const step = tickStep(v1 - v0);
      ctx.fillStyle = "#000"; ctx.textAlign = "center";
      for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
        const x = Math.round(xOf(t)) + 0.5;
        if (x < LABEL) continue;
        ctx.beginPath(); ctx.moveTo(x, AXIS - 6); ctx.lineTo(x, AXIS); ctx.stroke();
        ctx.strokeStyle = "rgba(0,0,0,0.07)"; ctx.beginPath(); ctx.moveTo(x, AXIS); ctx.lineTo(x, H); ctx.stroke(); ctx.strokeStyle = "#444";
        ctx.fillText(fmtTime(Math.round(t) * 1e-9, 4), x, AXIS - 9);
      }
      ctx.textAlign = "left";
      ctx.fillText("+" + fmtTime((v1 - v0) * 1e-9) + " shown", 6, 14);
      /* hover and selection, the launch arrow */
      for (const it of [sel, hover]) if (it) outline(it, it === sel ? "#000" : "#333", it === sel ? 2 : 1);
      const fl = hover || sel;
      if (fl && fl.i != null && sF[fl.i] >= 0) arrow(fl.i, sF[fl.i]);
      if (mouse && mouse.x > LABEL) {
        ctx.strokeStyle = "rgba(0,0,0,0.35)"; ctx.setLineDash([3, 3]);
        ctx.beginPath(); ctx.moveTo(mouse.x + 0.5, AXIS); ctx.lineTo(mouse.x + 0.5, H); ctx.stroke(); ctx.setLineDash([]);
      }
    }
    function fit(s, w) {
      if (ctx.measureText(s).width <= w) return s;
      let lo = 0, hi = s.length;
      while (lo < hi) { const m = (lo + hi + 1) >> 1; if (ctx.measureText(s.slice(0, m) + "…").width <= w) lo = m; else hi = m - 1; }
      return s.slice(0, lo) + "…";
    }
    function boxOf(it) {
      if (trackY[it.t] < 0) return null;
      const y = laneY(it.t, it.d);
      let a, b;
      if (it.i != null) { a = start[it.i]; b = a + (sD[it.i] || 0); }
      else { a = it.b * binNs; b = a + binNs; }
      const x0 = xOf(a), x1 = Math.max(xOf(b), x0 + 1);
      return { x0, x1, y };
    }
    function outline(it, c, w) {
      const b = boxOf(it);
      if (!b) return;
      ctx.save(); ctx.beginPath(); ctx.rect(LABEL, AXIS, W - LABEL, H - AXIS); ctx.clip();
      ctx.strokeStyle = c; ctx.lineWidth = w;
      ctx.strokeRect(b.x0 - 1, b.y - 1, b.x1 - b.x0 + 2, ROW);
      ctx.restore();
    }
    function arrow(i, j) {
      if (!(j >= 0 && j < n)) return;
      const call = kindName(sK[i]) === "api" || kindName(sK[i]) === "sync" ? i : j, op = call === i ? j : i;
      const ti = sT[call], to = sT[op];
      if (!(ti >= 0 && to >= 0) || trackY[ti] < 0 || trackY[to] < 0) return;
      const x0 = xOf(start[call]), y0 = laneY(ti, sDp[call] || 0) + ROW / 2, x1 = xOf(start[op]), y1 = laneY(to, sDp[op] || 0) + ROW / 2;
      ctx.save(); ctx.beginPath(); ctx.rect(LABEL, AXIS, W - LABEL, H - AXIS); ctx.clip();
      ctx.strokeStyle = "#000"; ctx.fillStyle = "#000"; ctx.lineWidth = 1.5;
      const my = (y0 + y1) / 2;
      ctx.beginPath(); ctx.moveTo(x0, y0); ctx.bezierCurveTo(x0, my, x1, my, x1, y1 - (y1 > y0 ? 6 : -6)); ctx.stroke();
      const dy = y1 > y0 ? 1 : -1;
      ctx.beginPath(); ctx.moveTo(x1, y1 - dy); ctx.lineTo(x1 - 4, y1 - dy * 8); ctx.lineTo(x1 + 4, y1 - dy * 8); ctx.closePath(); ctx.fill();
      ctx.beginPath(); ctx.arc(x0, y0, 2.5, 0, 7); ctx.fill();
      ctx.restore();
      wrap.dataset.arrow = call + ">" + op;
    }

    /* hit testing */
    function hit(mx, my) {
      if (mx < LABEL || my < AXIS) return null;
      const y = my - AXIS + scroller.scrollTop;
      let r = null;
      for (const q of rows) if (y >= q.y && y < q.y + q.h) { r = q; break; }
      if (!r) return null;
      if (r.t == null) return { g: r.g };
      const d = Math.floor((y - r.y - 2) / ROW), L = lanes[r.t][d];
      if (!L) return null;
      const t = tOf(mx), tol = 3 / kx();
      if (L.sum) {
        const bins = arr(L.sum.bin);
        const tb = Math.floor(t / binNs);
        let j = lb(bins, Math.floor((t - tol) / binNs));
        let best = -1, bd = Infinity;
        for (; j < bins.length && bins[j] * binNs <= t + tol; j++) { const dd = Math.abs(bins[j] - tb); if (dd < bd) { bd = dd; best = j; } }
        return best < 0 ? null : { t: r.t, d, s: L, j: best, b: bins[best] };
      }
      const { idx, s0, me } = L;
      let j = lb(s0, t + tol + 1e-9) - 1, best = -1, bd = Infinity, steps = 0;
      for (; j >= 0 && me[j] >= t - tol && steps < 4000; j--, steps++) {
        const i = idx[j], a = s0[j], b = a + (sD[i] || 0);
        const dd = t < a ? a - t : t > b ? t - b : 0;
        if (dd < bd || (dd === 0 && bd === 0 && b - a < (sD[idx[best]] || 0))) { bd = dd; best = j; }
        if (dd === 0 && bd === 0) break;
      }
      return best < 0 || bd > tol ? null : { t: r.t, d, i: idx[best] };
    }
    function trackName(t) { const tr = tracks[t] || {}; return (tr.group ? tr.group + " · " : "") + (tr.name != null ? tr.name : t); }
    function tipText(it) {
      if (it.i != null) {
        const i = it.i, k = kindName(sK[i]);
        return [nameOf(sN[i]), k + " on " + trackName(it.t), "start " + fmtTime(start[i] * 1e-9, 6) + " · duration " + fmtTime((sD[i] || 0) * 1e-9, 4),
          sF[i] >= 0 ? (k === "api" || k === "sync" ? "→ launches " + nameOf(sN[sF[i]]) : "← launched by " + nameOf(sN[sF[i]])) : null].filter(Boolean);
      }
      const s = it.s.sum, j = it.j;
      return ["bin " + it.b + ": " + fmtTime(it.b * binNs * 1e-9, 5) + " – " + fmtTime((it.b + 1) * binNs * 1e-9, 5), "on " + trackName(it.t) + ", depth " + it.d + (it.d >= 3 ? "+" : ""),
        "busy " + fmtPct(100 * (arr(s.busy)[j] || 0) / binNs) + " · " + fmtCount(arr(s.count)[j] || 0) + " slices", "most time: " + nameOf(arr(s.name)[j])];
    }
    function showTip(it, cx, cy) {
      if (!it || it.g) { tip.hidden = true; return; }
      tip.textContent = "";
      tipText(it).forEach((l, k) => add(tip, k ? h("div", null, l) : h("strong", null, l)));
      tip.hidden = false;
      const r = tip.getBoundingClientRect();
      let x = cx + 14, y = cy + 14;
      if (x + r.width > window.innerWidth - 4) x = cx - r.width - 10;
      if (y + r.height > window.innerHeight - 4) y = cy - r.height - 10;
      tip.style.left = x + "px"; tip.style.top = y + "px";
    }
    function select(it) {
      sel = it && !it.g ? it : null;
      panel.textContent = "";
      if (!sel) { add(panel, para("hint", "Click a slice to see its arguments.")); redraw(); return; }
      const dl = h("dl", { class: "kv" });
      const row = (k, v) => add(dl, [h("dt", null, k), h("dd", null, v)]);
      if (sel.i != null) {
        const i = sel.i, k = kindName(sK[i]), P = path + ".slices";
        add(panel, h("h3", null, nameOf(sN[i])));
        row("kind", k); row("track", trackName(sel.t)); row("depth", String(sDp[i] || 0));
        row("start", fmtTime(start[i] * 1e-9, 7) + " after the trace's start");
        row("duration", num(P + ".dur[" + i + "]", sD[i], F.ns));
        if (sL[i] >= 0) row("launch latency", num(P + ".latency[" + i + "]", sL[i], F.ns));
        const g = sG[i] >= 0 ? arr(TL.geoms)[sG[i]] : null;
        if (isObj(g)) {
          const gp = path + ".geoms[" + sG[i] + "]";
          for (const key in g) {
            const v = g[key];
            row(words(key), v === null ? "chosen by the runtime" : Array.isArray(v) ? dims(gp + "." + key, v) : isNum(v) ? num(gp + "." + key, v, /bytes/.test(key) ? F.bytes : key === "occupancy" ? F.frac : F.count) : String(v));
          }
        }
        const m = isObj(TL.metrics) ? TL.metrics[String(i)] : null;
        if (isObj(m)) for (const key in m) row(words(key), isNum(m[key]) ? num(path + ".metrics." + i + "." + key, m[key], key) : String(m[key]));
        if (sF[i] >= 0 && sF[i] < n) {
          const j = sF[i];
          row(k === "api" || k === "sync" ? "launched" : "launched by", h("button", { type: "button", class: "link", onclick: () => goTo(j) }, nameOf(sN[j]) + " (show it)"));
        }
      } else {
        const s = sel.s.sum, j = sel.j, P = path + ".summary[" + sel.s.si + "]";
        add(panel, h("h3", null, "bin " + sel.b + " of " + trackName(sel.t)));
        row("time", fmtTime(sel.b * binNs * 1e-9, 6) + " – " + fmtTime((sel.b + 1) * binNs * 1e-9, 6));
        row("depth", String(sel.d) + (sel.d >= 3 ? " and deeper" : ""));
        row("busy", [num(P + ".busy[" + j + "]", arr(s.busy)[j], F.ns), " (" + fmtPct(100 * (arr(s.busy)[j] || 0) / binNs) + " of the bin)"]);
        row("slices", num(P + ".count[" + j + "]", arr(s.count)[j], F.count));
        row("most time", nameOf(arr(s.name)[j]));
      }
      add(panel, dl);
      redraw();
    }
    function goTo(i) {
      const t = sT[i], d = sDp[i] || 0;
      for (const g of groups) if (g.tracks.indexOf(t) >= 0 && g.closed) { g.closed = false; layout(); size(); }
      const a = start[i], b = a + (sD[i] || 0), w = Math.max(v1 - v0, (b - a) * 3);
      if (a < v0 || b > v1) { v0 = (a + b) / 2 - w / 2; v1 = v0 + w; }
      const y = trackY[t];
      if (y < scroller.scrollTop || y > scroller.scrollTop + H - AXIS - ROW * 2) scroller.scrollTop = Math.max(0, y - 40);
      select({ t, d, i });
    }

    /* zoom and pan */
    function zoom(f, atX) {
      if (!(f > 0 && isFinite(f))) return;
      const t = atX != null && atX > LABEL ? tOf(atX) : (v0 + v1) / 2;
      let w = (v1 - v0) * f;
      w = Math.min(Math.max(w, 50), span * 20);
      const r = (t - v0) / (v1 - v0);
      v0 = t - r * w; v1 = v0 + w;
      redraw();
    }
    function pan(dx) { if (!isFinite(dx)) return; const d = dx / kx(); v0 += d; v1 += d; redraw(); }
    cv.addEventListener("wheel", e => {
      e.preventDefault();
      const r = cv.getBoundingClientRect(), x = e.clientX - r.left;
      const u = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1, dy = (+e.deltaY || 0) * u, dx = (+e.deltaX || 0) * u;
      if (e.shiftKey) pan(dy || dx);
      else if (Math.abs(dx) > Math.abs(dy)) pan(dx);
      else zoom(Math.exp(dy * 0.002), x);
    }, { passive: false });
    let drag = null, over = false;
    cv.addEventListener("mousedown", e => {
      if (e.button !== 0) return;
      drag = { x: e.clientX, y: e.clientY, v0, v1, st: scroller.scrollTop, moved: false };
      scroller.focus({ preventScroll: true });
      e.preventDefault();
    });
    window.addEventListener("mousemove", e => {
      if (drag) {
        const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
        if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
        if (drag.moved) {
          const d = dx / (plotW() / (drag.v1 - drag.v0));
          v0 = drag.v0 - d; v1 = drag.v1 - d;
          scroller.scrollTop = drag.st - dy;
          tip.hidden = true;
          redraw();
        }
      }
    });
    window.addEventListener("mouseup", e => {
      if (!drag) return;
      const d = drag;
      drag = null;
      if (!d.moved) {
        const r = cv.getBoundingClientRect(), it = hit(e.clientX - r.left, e.clientY - r.top);
        if (it && it.g) { it.g.closed = !it.g.closed; layout(); size(); redraw(); }
        else select(it);
      }
    });
    cv.addEventListener("mousemove", e => {
      over = true;
      if (drag && drag.moved) return;
      const r = cv.getBoundingClientRect();
      mouse = { x: e.clientX - r.left, y: e.clientY - r.top };
      hover = hit(mouse.x, mouse.y);
      if (hover && hover.g) { cv.style.cursor = "pointer"; hover = null; } else cv.style.cursor = "";
      showTip(hover, e.clientX, e.clientY);
      redraw();
    });
    cv.addEventListener("mouseleave", () => { over = false; hover = null; mouse = null; tip.hidden = true; redraw(); });
    scroller.addEventListener("scroll", () => redraw());
    function onScreen() { const r = scroller.getBoundingClientRect(); return r.bottom > 0 && r.top < (window.innerHeight || 0); }
    document.addEventListener("keydown", e => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const tg = e.target && e.target.tagName;
      if (tg === "INPUT" || tg === "TEXTAREA" || tg === "SELECT" || (e.target && e.target.isContentEditable)) return;
      const focused = document.activeElement === scroller || over;
      if (!focused && !onScreen()) return;
      const at = over && mouse ? mouse.x : null, step = plotW() * 0.15;
      const k = e.key;
      let done = true;
      if (k === "w" || k === "W" || k === "+" || k === "=") zoom(0.8, at);
      else if (k === "s" || k === "S" || k === "-" || k === "_") zoom(1.25, at);
      else if (k === "a" || k === "A") pan(-step);
      else if (k === "d" || k === "D") pan(step);
      else if (k === "0") { reset(); redraw(); }
      else if (focused && (k === "ArrowUp")) zoom(0.8, at);
      else if (focused && (k === "ArrowDown")) zoom(1.25, at);
      else if (focused && k === "ArrowLeft") pan(-step);
      else if (focused && k === "ArrowRight") pan(step);
      else if (focused && k === "Home") { reset(); redraw(); }
      else if (k === "Escape") select(null);
      else done = false;
      if (done) e.preventDefault();
    });
    /* Where slice i is drawn, in the window's coordinates (null where it is not on screen): for
     * tests that hover and click it. */
    wrap.kprofSliceAt = i => {
      if (!start || !(i >= 0 && i < n) || trackY[sT[i]] < 0) return null;
      const r = cv.getBoundingClientRect();
      const x = xOf(start[i] + (sD[i] || 0) / 2), y = laneY(sT[i], sDp[i] || 0) + ROW / 2;
      if (x < LABEL || x > W || y < AXIS || y > H) return null;
      return { x: r.left + x, y: r.top + y };
    };
    add(tools, [
      h("button", { type: "button", onclick: () => zoom(0.5) }, "zoom in (W)"),
      h("button", { type: "button", onclick: () => zoom(2) }, "zoom out (S)"),
      h("button", { type: "button", onclick: () => pan(-plotW() * 0.3) }, "◀ (A)"),
      h("button", { type: "button", onclick: () => pan(plotW() * 0.3) }, "▶ (D)"),
      h("button", { type: "button", onclick: () => { reset(); redraw(); } }, "reset (0)"),
    ]);
    let rz = 0;
    window.addEventListener("resize", () => { if (!rz) rz = requestAnimationFrame(() => { rz = 0; size(); draw(); }); });
    window.addEventListener("beforeprint", () => { size(); draw(); });
    /* first draw once the wrapper is in the document */
    wrap.kprofFirstDraw = () => { size(); draw(); };
    return wrap;
  }

  /* ---- bench page -------------------------------------------------------------------------- */

  const VERD = { SAME: ["=", "st-same"], FASTER: ["▼", "st-faster"], SLOWER: ["▲", "st-slower"], UNSURE: ["?", "st-unsure"] };
  function verdictBadge(v) {
    const x = VERD[String(v).toUpperCase()];
    return h("span", { class: "badge big " + (x ? x[1] : "st-none") }, (x ? x[0] + " " : "") + (v == null ? "no verdict" : String(v)));
  }
  function kernelLabel(k, i) { return k.label || k.entry || "kernel " + (i + 1); }
  function benchPage(D, app) {
    const B = D.bench || {}, P = "bench";
    add(app, header(D, [kv(B, P, ["version", "kind", "config", "axes", "points"]),
      isObj(B.config) ? h("details", { class: "cfg" }, [h("summary", null, "configuration"), kv(B.config, P + ".config", null,
        { max_noise: F.frac, threshold: F.frac, throttle_fraction: F.frac, warmup: F.count })]) : null]));
    const pts = arr(B.points);
    if (arr(B.axes).length && pts.length > 1) add(app, axesSection(B, P));
    pts.forEach((p, i) => add(app, benchPoint(p, P + ".points[" + i + "]", i)));
    const roofs = [];
    pts.forEach((p, i) => arr(p.kernels).forEach((k, j) => {
      const d = k.counters && k.counters.derived;
      if (isObj(d)) roofs.push({ label: (p.point ? p.point + " · " : "") + kernelLabel(k, j), d, path: P + ".points[" + i + "].kernels[" + j + "].counters.derived" });
    }));
    if (roofs.length) add(app, roofSection(roofs));
  }
  function benchPoint(p, path, pi) {
    const ks = arr(p.kernels), kids = [];
    kids.push(kv(p, path, ["point", "axes", "kernels", "comparison", "stop"], { bytes: F.bytes, other_cpus: F.count, host_cpus: F.count }));
    kids.push(h("p", { class: "stop" }, ["stop rule: ", h("strong", null, p.stop == null ? "—" : String(p.stop))]));
    kids.push(table({
      rows: ks, path: path + ".kernels", cols: [
        { label: "kernel", num: false, sort: r => kernelLabel(r, 0), cell: (r, i) => [h("strong", null, kernelLabel(r, i)), r.label && r.entry ? " " + r.entry : "", r.source ? h("div", { class: "src" }, r.source) : null] },
        { label: "median", k: "median_ms", f: F.ms }, { label: "95% interval", num: true, sort: r => arr(r.ci_ms)[0], cell: (r, i, p2) => interval(p2 + ".ci_ms", r.ci_ms, F.ms) },
        { label: "min", k: "min_ms", f: F.ms }, { label: "p90", k: "p90_ms", f: F.ms }, { label: "max", k: "max_ms", f: F.ms },
        { label: "samples", k: "samples", f: F.count }, { label: "noise", k: "noise", f: F.frac }, { label: "GB/s", k: "gbps", f: F.gbs },
      ].concat(ks.some(k => isNum(k.gflops)) ? [{ label: "GFLOP/s", k: "gflops", f: F.gflops }] : [])
        .concat(ks.some(k => isNum(k.clock_mhz)) ? [{ label: "clock", k: "clock_mhz", f: F.mhz }] : [])
        .concat([{ label: "rounds", k: "rounds", f: F.count }, { label: "throttled", k: "throttled", f: F.count }]),
    }));
    ks.forEach((k, i) => { if (k.shape && (k.shape.drifting || arr(k.shape.modes).length || arr(k.shape.unstable).length)) kids.push(para("warn", "⚠ " + kernelLabel(k, i) + ": " + (k.shape.drifting ? "drifting; " : "") + (arr(k.shape.modes).length ? "several modes; " : "") + (arr(k.shape.unstable).length ? "unstable" : ""))); });
    const c = p.comparison;
    if (isObj(c)) {
      const cp = path + ".comparison";
      kids.push(h("div", { class: "compare" }, [
        h("p", { class: "vline" }, [verdictBadge(c.verdict), " B/A ratio ", num(cp + ".ratio", c.ratio, F.ratio), " 95% interval ", interval(cp + ".ci", c.ci, F.ratio),
          isNum(c.threshold) ? [", band ±", num(cp + ".threshold", c.threshold, F.frac)] : null].flat()),
        c.reason ? para("reason", "reason: " + c.reason) : null,
        arr(c.reasons).length ? para("reason", "reasons: " + c.reasons.map(words).join(", ")) : null,
        kv(c, cp, ["ratio", "ci", "threshold", "verdict", "reason", "reasons", "sample_ci"], { cycles_ratio: F.ratio, runs: F.count, busy_cpus: F.count }),
      ]));
    }
    const withS = ks.filter(k => arr(k.samples_ms).length);
    if (withS.length) kids.push(sampleHist(ks, path));
    const title = p.point ? "Point " + p.point : "Result" + (pi ? " " + (pi + 1) : "");
    return section(title, kids, "point" + pi);
  }
  function quant(sorted, q) { if (!sorted.length) return NaN; const pos = q * (sorted.length - 1), lo = Math.floor(pos), hi = Math.min(lo + 1, sorted.length - 1); return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo); }
  function sampleHist(ks, path) {
    const sets = ks.map(k => Float64Array.from(arr(k.samples_ms).filter(isNum)).sort());
    let lo = Infinity, hi = -Infinity;
    sets.forEach(s => { if (s.length) { lo = Math.min(lo, s[0]); hi = Math.max(hi, quant(s, 0.99)); } });
    if (!(hi > lo)) hi = lo + Math.max(Math.abs(lo) * 0.01, 1e-6);
    const NB = 50, bw = (hi - lo) / NB;
    const counts = sets.map(s => {
      const c = new Array(NB).fill(0);
      let over = 0;
      for (const v of s) { const b = Math.floor((v - lo) / bw); if (b >= NB) { if (v <= hi * (1 + 1e-12)) c[NB - 1]++; else over++; } else c[Math.max(0, b)]++; }
      return { c, over, n: s.length };
    });
    const ymax = Math.max.apply(null, counts.map(x => Math.max.apply(null, x.c)).concat([1]));
    const ch = chart({
      w: 660, h: 240, title: "sample histogram", x: { min: lo, max: hi, label: "time per dispatch (shared bins)", fmt: v => fmtTime(v / 1e3, 3) },
      y: { min: 0, max: ymax * 1.08, label: "samples", fmt: fmtCount },
      draw(g, X, Y) {
        counts.forEach((x, si) => {
          const col = PAL[si % PAL.length];
          if (si === 0) x.c.forEach((n, b) => { if (n) add(g, sv("rect", { x: X(lo + b * bw), y: Y(n), width: Math.max(0.5, X(lo + (b + 1) * bw) - X(lo + b * bw) - 0.5), height: Y(0) - Y(n), fill: col, "fill-opacity": 0.55 })); });
          else {
            let d = "M" + X(lo) + " " + Y(0);
            x.c.forEach((n, b) => { d += "L" + X(lo + b * bw) + " " + Y(n) + "L" + X(lo + (b + 1) * bw) + " " + Y(n); });
            d += "L" + X(hi) + " " + Y(0);
            add(g, [sv("path", { d: d + "Z", fill: si === 1 ? "url(#hatch)" : "none", "fill-opacity": 0.6, stroke: "none" }),
              sv("path", { d, fill: "none", stroke: col, "stroke-width": 2, "stroke-dasharray": DASH[si % DASH.length] })]);
          }
          const k = ks[si];
          if (isNum(k.median_ms) && k.median_ms >= lo && k.median_ms <= hi) {
            const xm = X(k.median_ms);
            add(g, [sv("line", { x1: xm, x2: xm, y1: Y(0), y2: Y(ymax * 1.05), stroke: si ? col : "#000", "stroke-width": 1.5, "stroke-dasharray": si ? "5 3" : "" }),
              sv("text", { x: xm + 3, y: Y(ymax * 1.02) + si * 12, class: "small" }, "median " + kernelLabel(k, si))]);
          }
        });
      },
    });
    const items = ks.map((k, si) => ({ label: kernelLabel(k, si) + (si === 0 ? " (solid bars)" : si === 1 ? " (hatched, outlined)" : " (outlined)") + ": " + fmtCount(counts[si].n) + " samples" + (counts[si].over ? ", " + fmtCount(counts[si].over) + " above the 99th percentile not drawn" : ""),
      color: PAL[si % PAL.length], box: si === 0 ? PAL[0] : si === 1 ? "url(#hatch)" : null, line: si !== 0, dash: DASH[si % DASH.length], opacity: 0.55 }));
    return h("div", { class: "fig" }, [h("h3", null, "Samples" + (ks.length > 1 ? ", overlaid" : "")), ch, legend(items)]);
  }
  function axesSection(B, P) {
    const ax = B.axes[0], name = ax.name, pts = arr(B.points);
    const xv = pts.map(p => Number(isObj(p.axes) ? p.axes[name] : NaN));
    const numeric = xv.every(isNum);
    const xs = numeric ? xv : pts.map((_, i) => i);
    const log = numeric && xs.every(v => v > 0) && Math.max.apply(null, xs) / Math.min.apply(null, xs) >= 8;
    /* series: kernel label × the other axes' values */
    const series = new Map();
    pts.forEach((p, i) => arr(p.kernels).forEach((k, j) => {
      const others = arr(B.axes).slice(1).map(a => a.name + "=" + (p.axes ? p.axes[a.name] : "?")).join(" ");
      const key = kernelLabel(k, j) + (others ? " " + others : "");
      if (!series.has(key)) series.set(key, []);
      series.get(key).push({ x: xs[i], k, path: P + ".points[" + i + "].kernels[" + j + "]" });
    }));
    const ys = [];
    for (const s of series.values()) for (const q of s) ys.push(q.k.median_ms, arr(q.k.ci_ms)[1]);
    const xr = range(xs, log), yr = range(ys, false, true);
    const keys = Array.from(series.keys());
    const ch = chart({
      w: 700, h: 320, title: "median against " + name,
      x: { min: xr[0], max: xr[1], log, label: name, ticks: Array.from(new Set(xs)).sort((a, b) => a - b), fmt: numeric ? v => fmtCount(v) : v => String(arr(ax.values)[v] || v) },
      y: { min: yr[0], max: yr[1], label: "median time (bars: 95% interval)", fmt: v => fmtTime(v / 1e3, 3) },
      draw(g, X, Y) {
        keys.forEach((key, si) => {
          const s = series.get(key).slice().sort((a, b) => a.x - b.x), col = PAL[si % PAL.length], shp = SHAPES[si % SHAPES.length];
          add(g, sv("polyline", { points: s.filter(q => isNum(q.k.median_ms)).map(q => X(q.x) + "," + Y(q.k.median_ms)).join(" "), fill: "none", stroke: col, "stroke-width": 2, "stroke-dasharray": DASH[si % DASH.length] }));
          for (const q of s) {
            const ci = arr(q.k.ci_ms), x = X(q.x);
            if (ci.length === 2 && isNum(ci[0]) && isNum(ci[1])) add(g, sv("path", { d: `M${x} ${Y(ci[0])}V${Y(ci[1])}M${x - 5} ${Y(ci[0])}h10M${x - 5} ${Y(ci[1])}h10`, stroke: col, "stroke-width": 1.5 }));
            if (isNum(q.k.median_ms)) add(g, marker(shp, x, Y(q.k.median_ms), 4.5, { fill: col, stroke: "#000", "stroke-width": 0.6 }, sv("title", null, key + " " + fmtTime(q.k.median_ms / 1e3, 4))));
          }
        });
      },
    });
    const tbl = h("table", { class: "tbl" }, [h("thead", null, h("tr", null, [h("th", null, name)].concat(keys.map(k => h("th", { class: "num" }, k + ": median [95%]"))))),
      h("tbody", null, Array.from(new Set(xs)).sort((a, b) => a - b).map(x => h("tr", null, [h("td", { class: "txt" }, numeric ? fmtCount(x) : String(arr(ax.values)[x]))].concat(keys.map(k => {
        const q = series.get(k).find(z => z.x === x);
        return h("td", { class: "num" }, q ? [num(q.path + ".median_ms", q.k.median_ms, F.ms), " ", interval(q.path + ".ci_ms", q.k.ci_ms, F.ms)] : "—");
      })))))]);
    return section("Against " + name, [ch, legend(keys.map((k, si) => ({ label: k, color: PAL[si % PAL.length], shape: SHAPES[si % SHAPES.length], dash: DASH[si % DASH.length] }))), h("div", { class: "tblwrap" }, tbl)], "axes");
  }
  function roofSection(list) {
    const xs = [], ys = [];
    let ceil = null, peak = null, ceilP = null, peakP = null;
    for (const r of list) {
      const d = r.d;
      if (isNum(d.arithmetic_intensity) && d.arithmetic_intensity > 0) xs.push(d.arithmetic_intensity);
      if (isNum(d.gflop_per_s) && d.gflop_per_s > 0) ys.push(d.gflop_per_s);
      if (isNum(d.ceiling_gb_per_s) && d.ceiling_gb_per_s > (ceil || 0)) { ceil = d.ceiling_gb_per_s; ceilP = r.path + ".ceiling_gb_per_s"; }
      if (isNum(d.peak_gflop_per_s) && d.peak_gflop_per_s > (peak || 0)) { peak = d.peak_gflop_per_s; peakP = r.path + ".peak_gflop_per_s"; }
    }
    const kids = [];
    const ok = list.filter(r => isNum(r.d.arithmetic_intensity) && r.d.arithmetic_intensity > 0 && isNum(r.d.gflop_per_s) && r.d.gflop_per_s > 0);
    if (ok.length && (ceil || peak)) {
      const ridge = ceil && peak ? peak / ceil : null;
      const xr = [Math.min.apply(null, xs.concat(ridge ? [ridge] : [])) / 8, Math.max.apply(null, xs.concat(ridge ? [ridge] : [])) * 8];
      const roofY = x => Math.min(ceil ? ceil * x : Infinity, peak || Infinity);
      const yr = [Math.min.apply(null, ys.concat([roofY(xr[0])])) / 4, Math.max.apply(null, ys.concat([peak || roofY(xr[1])])) * 3];
      kids.push(chart({
        w: 640, h: 360, title: "roofline", x: { min: xr[0], max: xr[1], log: true, label: "arithmetic intensity (flop/byte, log)", fmt: v => sig(v, 2) },
        y: { min: yr[0], max: yr[1], log: true, label: "GFLOP/s (log)", fmt: v => sig(v, 2) },
        draw(g, X, Y, Y2, box) {
          const pts = [];
          const N = 60;
          for (let i = 0; i <= N; i++) { const x = xr[0] * Math.pow(xr[1] / xr[0], i / N); pts.push(X(x) + "," + Y(Math.max(yr[0], roofY(x)))); }
          add(g, sv("polyline", { points: pts.join(" "), fill: "none", stroke: "#000", "stroke-width": 2 }));
          if (ceil) add(g, sv("text", { x: X(xr[0] * 1.3) + 2, y: Y(roofY(xr[0] * 1.3)) - 6, class: "small" }, ["memory roof ", svNum(ceilP, ceil, F.gbs, null, "tspan")]));
          if (peak) add(g, sv("text", { x: box.l + box.w - 4, y: Y(peak) - 6, "text-anchor": "end", class: "small" }, ["compute roof ", svNum(peakP, peak, F.gflops, null, "tspan")]));
          if (ridge) add(g, [sv("line", { x1: X(ridge), x2: X(ridge), y1: Y(peak), y2: box.t + box.h, stroke: "#777", "stroke-dasharray": "3 3" }),
            sv("text", { x: X(ridge) + 3, y: box.t + box.h - 4, class: "small" }, "ridge " + F.ai(ridge))]);
          ok.forEach((r, si) => {
            const x = X(r.d.arithmetic_intensity), y = Y(r.d.gflop_per_s), col = PAL[si % PAL.length];
            add(g, [marker(SHAPES[si % SHAPES.length], x, y, 5.5, { fill: col, stroke: "#000" }), sv("text", { x: x + 8, y: y + 4, class: "small" }, r.label)]);
          });
        },
      }));
      kids.push(legend(ok.map((r, si) => ({ label: r.label + (r.d.bound ? " — " + r.d.bound + " bound" : ""), color: PAL[si % PAL.length], shape: SHAPES[si % SHAPES.length], line: false }))));
    } else kids.push(para("hint", "No roofline: the counters give no arithmetic intensity with a memory or compute roof."));
    for (const r of list) kids.push(h("h3", null, r.label), kv(r.d, r.path, null, { dram_bytes: F.bytes, estimated_bytes: F.bytes, measured_over_estimated: F.ratio, flops: F.flops, flops_fp32: F.flops, flops_fp64: F.flops, flops_fp16: F.flops }));
    return section("Roofline (counters)", kids, "roofline");
  }

  /* ---- diff page --------------------------------------------------------------------------- */

  function diffPage(D, app) {
    const X = D.diff || {}, P = "diff";
    add(app, header(D, [kv(X, P, ["version", "a", "b", "device", "host", "ranges", "points", "summary", "verdict_changed"], { min_effect_us: F.us, min_instances: F.count, min_samples: F.count })]));
    const ab = h("div", { class: "ab" }, ["a", "b"].map(s => {
      const o = X[s];
      if (!isObj(o)) return null;
      const p = P + "." + s;
      const kids = [h("h3", null, s.toUpperCase()), kv(o, p, ["verdict"])];
      if (isObj(o.verdict)) for (const w in o.verdict) {
        const v = o.verdict[w];
        if (!isObj(v)) continue;
        const changed = isObj(X.verdict_changed) ? X.verdict_changed[w] : null;
        kids.push(h("div", { class: "verdict small" }, [h("h4", null, [words(w) + ": ", kindBadge(v.kind || "?"), changed === true ? h("span", { class: "badge st-slower" }, " changed") : changed === false ? h("span", { class: "unch" }, " (unchanged)") : null]),
          para("sentence", v.sentence || ""), kv(v, p + ".verdict." + w, ["kind", "sentence"])]));
      }
      return h("div", { class: "side" }, kids);
    }));
    add(app, section("A and B", [ab, isObj(X.verdict_changed) ? para("vc", "verdict changed: " + Object.keys(X.verdict_changed).map(k => words(k) + " " + (X.verdict_changed[k] ? "YES" : "no")).join(", ")) : null], "ab"));
    if (isObj(X.summary)) add(app, section("Summary", [summary(X.summary, P + ".summary"), "fails_gate" in X ? para(X.fails_gate ? "warn" : "ok", X.fails_gate ? "✗ fails the gate" : "✓ passes the gate") : null], "summary"));
    const diffCols = [
      { label: "name", num: false, sort: r => r.name, cell: r => [h("span", { class: "name", title: r.key || r.name }, r.name || r.point || ""), r.key && r.key !== r.name ? h("div", { class: "src" }, r.key) : null] },
      { label: "status", num: false, sort: r => r.status, cell: r => badge(r.status) },
      { label: "verdict", num: false, sort: r => r.verdict, cell: r => r.verdict ? String(r.verdict) : "—" },
      { label: "A count", k: "a.count", f: F.count }, { label: "A total", k: "a.total_s" }, { label: "A median", k: "a.median_s" },
      { label: "B count", k: "b.count", f: F.count }, { label: "B total", k: "b.total_s" }, { label: "B median", k: "b.median_s" },
      { label: "Δ count", k: "delta.count", f: v => (v > 0 ? "+" : "") + fmtCount(v) }, { label: "Δ total", k: "delta.total_s", f: F.dS }, { label: "Δ median", k: "delta.median_s", f: F.dS },
      { label: "ratio total", k: "ratio.total", f: F.ratio }, { label: "ratio median", k: "ratio.median", f: F.ratio },
      { label: "ratio [95%]", sort: r => r.comparison && r.comparison.ratio, cell: (r, i, p) => isObj(r.comparison) ? [num(p + ".comparison.ratio", r.comparison.ratio, F.ratio), " ", interval(p + ".comparison.ci", r.comparison.ci, F.ratio)] : "—" },
      { label: "reason / note", num: false, sort: r => r.reason || r.note, cell: r => h("span", { class: "reason" }, [r.reason || "", r.reason && r.note ? " · " : "", r.note || ""]) },
    ];
    const kids = [];
    for (const t of ["device", "host", "ranges"]) if (Array.isArray(X[t])) kids.push(h("h3", null, t === "device" ? "Device work" : t === "host" ? "Host calls" : "Ranges"), X[t].length ? table({ rows: X[t], path: P + "." + t, cols: diffCols }) : para("empty", "none"));
    if (Array.isArray(X.points)) kids.push(h("h3", null, "Points"), table({
      rows: X.points, path: P + ".points", cols: [
        { label: "point", num: false, sort: r => r.point, cell: r => (r.point || "(the result)") + (r.cache ? " · " + r.cache : "") },
        { label: "status", num: false, sort: r => r.status, cell: r => badge(r.status) },
        { label: "verdict", num: false, sort: r => r.comparison && r.comparison.verdict, cell: r => isObj(r.comparison) && r.comparison.verdict ? verdictBadge(r.comparison.verdict) : "—" },
        { label: "A median", k: "a.median_ms", f: F.ms }, { label: "A 95%", sort: r => r.a && arr(r.a.ci_ms)[0], cell: (r, i, p) => r.a ? interval(p + ".a.ci_ms", r.a.ci_ms, F.ms) : "—" },
        { label: "A min", k: "a.min_ms", f: F.ms }, { label: "A samples", k: "a.samples", f: F.count },
        { label: "B median", k: "b.median_ms", f: F.ms }, { label: "B 95%", sort: r => r.b && arr(r.b.ci_ms)[0], cell: (r, i, p) => r.b ? interval(p + ".b.ci_ms", r.b.ci_ms, F.ms) : "—" },
        { label: "B min", k: "b.min_ms", f: F.ms }, { label: "B samples", k: "b.samples", f: F.count },
        { label: "ratio [95%]", sort: r => r.comparison && r.comparison.ratio, cell: (r, i, p) => isObj(r.comparison) ? [num(p + ".comparison.ratio", r.comparison.ratio, F.ratio), " ", interval(p + ".comparison.ci", r.comparison.ci, F.ratio)] : "—" },
        { label: "reason", num: false, sort: r => r.reason, cell: r => h("span", { class: "reason" }, r.reason || "") },
      ],
    }));
    if (kids.length) add(app, section("Changes", kids.concat([para("hint", "Status: ▲ slower, ▼ faster, = same, ? unsure (the interval is not clear of the band), A/B only in one side, – not judged. Ratios are B/A.")]), "changes"));
  }
  function summary(S, path) {
    return h("div", { class: "summary" }, Object.keys(S).filter(k => isNum(S[k])).map(k => h("span", { class: "sum-item" + (S[k] ? " nz" : "") }, [badge(k, words(k)), " ", num(path + "." + k, S[k], F.count)])));
  }

  /* ---- sweep page -------------------------------------------------------------------------- */

  function sweepPage(D, app) {
    const S = D.sweep || {}, P = "sweep", pts = arr(S.points);
    add(app, header(D, [isObj(S.device) ? kv(S.device, P + ".device", null, { index: F.count }) : null,
      kv(S, P, ["version", "kprof_version", "points", "device", "warnings", "counters"], { iterations: F.count, warmup: F.count, kernel_max_threadgroup_size: F.count, device_max_threadgroup_size: F.count, sizes_planned: F.count, sizes_measured: F.count, static_local_bytes: F.bytes, dynamic_local_bytes: F.bytes }),
      arr(S.warnings).length ? h("ul", { class: "notes" }, S.warnings.map(w => h("li", null, typeof w === "string" ? w : JSON.stringify(w)))) : null]));
    const xs = pts.map(p => isNum(p.threads) ? p.threads : arr(p.threadgroup).reduce((a, b) => a * b, 1));
    const tgText = p => arr(p.threadgroup).join("×") || String(p.threads);
    const ys = [];
    pts.forEach(p => ys.push(p.gpu_ms_median, p.gpu_ms_min, p.gpu_ms_median_ci_low, p.gpu_ms_median_ci_high));
    const occ = pts.some(p => isNum(p.occupancy));
    const kids = [];
    if (pts.length) {
      const xr = range(xs, xs.every(v => v > 0)), yr = range(ys, false, true);
      kids.push(chart({
        w: 760, h: 360, title: "occupancy curve", x: { min: xr[0], max: xr[1], log: xs.every(v => v > 0), ticks: Array.from(new Set(xs)).sort((a, b) => a - b), label: "threads per threadgroup (log)", fmt: fmtCount },
        y: { min: yr[0], max: yr[1], label: "device time per dispatch", fmt: v => fmtTime(v / 1e3, 3) },
        y2: occ ? { min: 0, max: 1.05, label: "occupancy (diamonds)", fmt: v => fmtPct(v * 100) } : null,
        draw(g, X, Y, Y2) {
          const ord = pts.map((p, i) => i).sort((a, b) => xs[a] - xs[b]);
          const band = ord.filter(i => isNum(pts[i].gpu_ms_median_ci_low) && isNum(pts[i].gpu_ms_median_ci_high));
          if (band.length > 1) add(g, sv("polygon", { points: band.map(i => X(xs[i]) + "," + Y(pts[i].gpu_ms_median_ci_high)).concat(band.slice().reverse().map(i => X(xs[i]) + "," + Y(pts[i].gpu_ms_median_ci_low))).join(" "), fill: "#56B4E9", "fill-opacity": 0.3, stroke: "none" }));
          const line = (key, col, dash) => add(g, sv("polyline", { points: ord.filter(i => isNum(pts[i][key])).map(i => X(xs[i]) + "," + Y(pts[i][key])).join(" "), fill: "none", stroke: col, "stroke-width": 2, "stroke-dasharray": dash }));
          line("gpu_ms_median", "#0072B2", "");
          line("gpu_ms_min", "#009E73", "5 3");
          if (occ) add(g, sv("polyline", { points: ord.filter(i => isNum(pts[i].occupancy)).map(i => X(xs[i]) + "," + Y2(pts[i].occupancy)).join(" "), fill: "none", stroke: "#CC79A7", "stroke-width": 1.5, "stroke-dasharray": "2 3" }));
          for (const i of ord) {
            const p = pts[i], x = X(xs[i]);
            if (isNum(p.gpu_ms_median_ci_low) && isNum(p.gpu_ms_median_ci_high)) add(g, sv("path", { d: `M${x} ${Y(p.gpu_ms_median_ci_low)}V${Y(p.gpu_ms_median_ci_high)}M${x - 4} ${Y(p.gpu_ms_median_ci_low)}h8M${x - 4} ${Y(p.gpu_ms_median_ci_high)}h8`, stroke: "#0072B2", "stroke-width": 1.2 }));
            if (isNum(p.gpu_ms_min)) add(g, marker("square", x, Y(p.gpu_ms_min), 3, { fill: "#fff", stroke: "#009E73", "stroke-width": 1.5 }));
            if (isNum(p.occupancy)) add(g, marker("diamond", x, Y2(p.occupancy), 3.5, { fill: "#CC79A7", stroke: "#000", "stroke-width": 0.5 }));
            if (isNum(p.gpu_ms_median)) {
              const y = Y(p.gpu_ms_median);
              if (p.best) add(g, [marker("star", x, y, 8, { fill: "#D55E00", stroke: "#000" }), sv("text", { x, y: y - 13, "text-anchor": "middle", class: "small strong" }, "best")]);
              else if (p.tie) add(g, [marker("triangle", x, y, 6, { fill: "#E69F00", stroke: "#000" }), sv("text", { x, y: y - 12, "text-anchor": "middle", class: "small" }, "tie")]);
              else add(g, marker("circle", x, y, 3.5, { fill: "#0072B2", stroke: "#000", "stroke-width": 0.5 }));
              if (p.your_tg) add(g, sv("text", { x, y: y + 18, "text-anchor": "middle", class: "small" }, "yours"));
            }
          }
        },
      }));
      kids.push(legend([{ label: "median (circles; band and bars: its 95% interval)", color: "#0072B2", shape: "circle" }, { label: "min (squares, dashed)", color: "#009E73", shape: "square", fill: "#fff", dash: "5 3" },
        { label: "best (★)", color: "#D55E00", shape: "star", line: false }, { label: "tied with the best (▲)", color: "#E69F00", shape: "triangle", line: false }].concat(occ ? [{ label: "occupancy, right axis (◆, dotted)", color: "#CC79A7", shape: "diamond", dash: "2 3" }] : [])));
      const best = pts.findIndex(p => p.best), ties = pts.map((p, i) => p.tie ? i : -1).filter(i => i >= 0);
      if (best >= 0) kids.push(h("p", { class: "bestline" }, ["★ best: threadgroup ", dims(P + ".points[" + best + "].threadgroup", pts[best].threadgroup), ", median ", num(P + ".points[" + best + "].gpu_ms_median", pts[best].gpu_ms_median, F.ms),
        ties.length ? "; tied with it (intervals overlap): " + ties.map(i => tgText(pts[i])).join(", ") : "; no size ties with it"]));
    }
    kids.push(table({
      rows: pts, path: P + ".points", cols: [
        { label: "threadgroup", num: false, sort: (r) => r.threads, cell: (r, i, p) => dims(p + ".threadgroup", arr(r.threadgroup)) },
        { label: "threads", k: "threads", f: F.count }, { label: "median", k: "gpu_ms_median", f: F.ms },
        { label: "95% interval", sort: r => r.gpu_ms_median_ci_low, cell: (r, i, p) => h("span", { class: "ci" }, ["[", num(p + ".gpu_ms_median_ci_low", r.gpu_ms_median_ci_low, F.ms), ", ", num(p + ".gpu_ms_median_ci_high", r.gpu_ms_median_ci_high, F.ms), "]"]) },
        { label: "min", k: "gpu_ms_min", f: F.ms }, { label: "p10", k: "gpu_ms_p10", f: F.ms }, { label: "p90", k: "gpu_ms_p90", f: F.ms },
        { label: "GB/s", k: "approx_gb_per_s", f: F.gbs },
      ].concat(occ ? [{ label: "occupancy", k: "occupancy", f: F.frac }, { label: "limited by", num: false, sort: r => r.occupancy_limiter, cell: r => r.occupancy_limiter || "" }] : [])
        .concat([{ label: "iterations", k: "iterations", f: F.count }, { label: "mark", num: false, sort: r => (r.best ? 2 : 0) + (r.tie ? 1 : 0), cell: r => [r.best ? h("span", { class: "badge st-faster" }, "★ best") : null, r.tie ? h("span", { class: "badge st-unsure" }, "▲ tie") : null, r.your_tg ? h("span", { class: "badge" }, "yours") : null, r.above_ceiling_reason ? h("span", { class: "reason" }, " " + r.above_ceiling_reason) : null] }]),
    }));
    add(app, section("Occupancy curve", kids, "curve"));
    const roofs = [];
    pts.forEach((p, i) => { const d = p.counters && p.counters.derived; if (isObj(d)) roofs.push({ label: "tg " + tgText(p), d, path: P + ".points[" + i + "].counters.derived" }); });
    if (isObj(S.counters) && isObj(S.counters.derived)) roofs.push({ label: "the sweep", d: S.counters.derived, path: P + ".counters.derived" });
    if (roofs.length) add(app, roofSection(roofs));
  }

  /* ---- main -------------------------------------------------------------------------------- */

  function main() {
    const app = document.getElementById("app");
    let D;
    try {
      D = JSON.parse(document.getElementById("kprof-data").textContent);
      if (!isObj(D)) throw new Error("the page's data is not a JSON object");
      const kind = D.page;
      if (kind === "trace") tracePage(D, app);
      else if (kind === "bench") benchPage(D, app);
      else if (kind === "diff") diffPage(D, app);
      else if (kind === "sweep") sweepPage(D, app);
      else add(app, header(D, para("warn", "This page's kind, " + JSON.stringify(kind) + ", is not one this script knows.")));
      add(app, h("footer", null, (D.producer || "kprof") + " — a self-contained page: everything it shows is in its kprof-data block."));
      const tl = app.querySelector(".tl");
      if (tl && tl.kprofFirstDraw) tl.kprofFirstDraw();
    } catch (e) {
      document.documentElement.dataset.error = String(e && e.message || e);
      app.insertBefore(h("pre", { class: "error", role: "alert" }, "kprof page error: " + (e && e.stack || e)), app.firstChild);
      throw e;
    }
    document.documentElement.dataset.drawn = "1";
    window.kprofDrawnMs = performance.now();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", main);
  else main();
})();
