// Every page's script for its plotly figures: SVG export, 中文 modebar, a text alternative and a Data table,
// keyboard, dark mode (demo/kit/figure_head.py says what each does). demo/kit/figure_head.py puts it in <head>, after the
// words it reads from window.plmFigureConfig.
(() => {
  const config = window.plmFigureConfig;
  const titles = config.titles;  // the SVG button's tooltip in each language (assets/i18n, common.svg_button)
  const zhModebar = {dictionary: config.plotlyZh};  // plotly's own modebar texts in 中文 (common.plotly_*)
  const access = config.access;  // the Data button and the figure summaries (common.figure_access.*)
  const dark = config.dark;
  const language = () => ((document.documentElement.lang || navigator.language || "en").toLowerCase()
    .startsWith("zh") ? "zh" : "en");
  const fill = (template, fields) => template.replace(/\{(\w+)\}/g, (_, key) => fields[key]);
  const number = (v) => (typeof v === "number" && isFinite(v)) ? String(Number(v.toPrecision(4))) : String(v ?? "");
  const plain = (v) => String(v ?? "").replace(/<[^>]+>/g, " ").replace(/[\u200b]/g, "").replace(/\s+/g, " ").trim();
  const list = (v) => v == null ? [] : Array.from(v);

  // The PNG and SVG buttons export the figure at slide size as the server laid it out: where a narrow screen
  // re-laid it (below: a wrapped title, stacked panels, fewer labels, a legend or colour bar under the plot), that
  // layout is put back first, so a PNG saved on a phone is the one a laptop saves; so is plotly's own range where
  // the labels widened it (fitLabels). What the learner changed (zoom, hidden traces, dark mode) is kept.
  const exported = (gd) => {
    const given = gd.__plmGiven || {}, fit = gd.__plmFit, layout = {...gd.layout};
    if (!gd.__plmGiven && !fit) return gd;
    const laidOut = gd.__plmGiven ? ["title", "margin", "height", "annotations", "legend"] : [];
    for (const key of laidOut) layout[key] = given[key];
    for (const key of Object.keys(given)) {
      if (/^[xy]axis\d*$/.test(key)) layout[key] = {...gd.layout[key], domain: given[key]?.domain};
      if (/^coloraxis\d*$/.test(key)) layout[key] = {...gd.layout[key], colorbar: given[key]?.colorbar};
    }
    for (const [key, range] of fit ? [["xaxis", fit.x], ["yaxis", fit.y]] : []) {  // unless the learner zoomed
      const now = gd.layout[key]?.range;
      if (now && now[0] === range[0] && now[1] === range[1]) layout[key] = {...layout[key], autorange: true};
    }
    return {data: unbarred(gd, gd.data), layout};
  };
  window.plmSlideFigure = exported;  // the teacher's "Add to slides" (assets/kit.js) saves the same figure
  const download = (gd, format) => {
    const o = gd._context.toImageButtonOptions || {};
    window.Plotly.downloadImage(exported(gd), {format: format || o.format || "png", width: o.width, height: o.height,
                                               scale: format === "svg" ? 1 : o.scale, filename: o.filename});
  };
  const pngButton = {name: "toPNG", title: "", click: (gd) => download(gd)};
  const svgButton = {name: "toSVG", title: "", click: (gd) => download(gd, "svg")};
  const dataButton = {name: "dataTable", title: "", click: (gd) => toggleTable(gd),
    icon: {width: 1000, height: 1000,  // a table: a header bar over two rows of two cells
           path: "M0 50h1000v200H0zM0 350h450v250H0zM550 350h450v250H550zM0 700h450v250H0zM550 700h450v250H550z"}};

  // Rows of a trace's numbers: a heatmap as a matrix, other traces as (label, value) pairs.
  const rowsOf = (trace, words) => {
    if (trace.type === "heatmap") {
      const z = list(trace.z).map(list);
      const x = list(trace.x), y = list(trace.y);
      return {head: [words.data_row, ...z[0].map((_, j) => plain(x[j] ?? j))],
              rows: z.map((row, i) => [plain(y[i] ?? i), ...row.map(number)])};
    }
    const x = list(trace.x), y = list(trace.y), z = list(trace.z), labels = list(trace.text);
    const n = Math.max(x.length, y.length);
    const head = [plain(trace.name) || words.data_row, "x", "y", ...(z.length ? ["z"] : []),
                  ...(labels.length ? [words.data_label] : [])];
    return {head, rows: Array.from({length: n}, (_, i) => [String(i + 1), number(x[i]), number(y[i]),
      ...(z.length ? [number(z[i])] : []), ...(labels.length ? [plain(labels[i])] : [])])};
  };
  const summary = (trace, words) => {
    if (trace.type === "heatmap") {
      const z = list(trace.z).map(list), flat = z.flat().filter((v) => typeof v === "number" && isFinite(v));
      return fill(words.summary_heatmap, {rows: z.length, cols: (z[0] || []).length,
        low: number(Math.min(...flat)), high: number(Math.max(...flat))});
    }
    if (trace.type === "bar") {
      const flip = trace.orientation === "h";
      const keys = list(flip ? trace.y : trace.x), values = list(flip ? trace.x : trace.y);
      const shown = keys.slice(0, 12).map((k, i) => plain(k) + " " + number(values[i])).join(", ");
      return fill(words.summary_bars, {count: keys.length, values: shown + (keys.length > 12 ? ", …" : "")});
    }
    const count = Math.max(list(trace.x).length, list(trace.y).length);
    if (!count) return "";
    return fill(String(trace.mode || "lines").includes("lines") ? words.summary_lines : words.summary_points,
                {name: plain(trace.name) || "", count});
  };
  const traces = (gd) => (gd._fullData && gd._fullData.length ? gd._fullData : gd.data || [])
    .filter((t) => t.visible !== false);

  const buildTable = (gd, box) => {
    const words = access[language()];
    const title = plain(gd.layout?.title?.text) || words.data_button;
    let html = "";
    for (const trace of traces(gd)) {
      const {head, rows} = rowsOf(trace, words);
      const cut = rows.slice(0, 300).map((r) => r.slice(0, 61));
      const esc = (v) => String(v).replace(/&/g, "&amp;").replace(/</g, "&lt;");
      const name = plain(trace.name) ? " · " + esc(plain(trace.name)) : "";
      html += `<table><caption>${esc(fill(words.data_caption, {title}))}${name}`
        + `${rows.length > 300 || (rows[0] || []).length > 61 ? " · " + esc(words.data_first) : ""}</caption>`
        + `<thead><tr>${head.slice(0, 61).map((h) => `<th scope="col">${esc(h)}</th>`).join("")}</tr></thead><tbody>`
        + cut.map((r) => `<tr><th scope="row">${esc(r[0])}</th>`
                         + r.slice(1).map((v) => `<td>${esc(v)}</td>`).join("") + "</tr>").join("")
        + "</tbody></table>";
    }
    box.innerHTML = html;
  };
  const toggleTable = (gd) => {
    const open = gd.parentElement.querySelector(":scope > .figure-data");
    if (open) { open.remove(); return; }
    const box = document.createElement("div");
    box.className = "figure-data";
    box.tabIndex = 0;  // it scrolls: reachable by keyboard
    box.setAttribute("role", "region");
    box.setAttribute("aria-label", access[language()].data_button);
    gd.parentElement.insertBefore(box, gd.nextSibling);
    buildTable(gd, box);
  };
  const describe = (gd) => {
    const words = access[language()];
    const title = plain(gd.layout?.title?.text);
    const parts = traces(gd).map((t) => summary(t, words)).filter(Boolean);
    gd.setAttribute("role", "figure");
    gd.setAttribute("aria-label", [title, ...parts].filter(Boolean).join(". ").slice(0, 1000));
    gd.querySelectorAll(".modebar-btn").forEach((b) => {
      b.setAttribute("tabindex", "0");
      b.setAttribute("role", "button");
      b.setAttribute("aria-label", b.getAttribute("data-title") || "");
    });
    const open = gd.parentElement?.querySelector(":scope > .figure-data");
    if (open) buildTable(gd, open);
  };
  // Dark mode: the figure's template drawn light on dark (the figure's own settings are kept).
  const darken = (layout, gd) => {
    const paper = getComputedStyle(gd).getPropertyValue("--block-background-fill").trim() || dark.paper;
    const base = layout.template || {};
    const t = {...(base.layout || {})};
    const axis = (a) => ({...(a || {}), linecolor: dark.axis, gridcolor: dark.grid, zerolinecolor: dark.axis,
                          tickcolor: dark.axis});
    t.paper_bgcolor = paper;
    t.plot_bgcolor = paper;
    t.font = {...(t.font || {}), color: dark.ink};
    t.xaxis = axis(t.xaxis);
    t.yaxis = axis(t.yaxis);
    t.legend = {...(t.legend || {}), bgcolor: "rgba(0,0,0,0)"};
    t.scene = {xaxis: axis(t.scene?.xaxis), yaxis: axis(t.scene?.yaxis), zaxis: axis(t.scene?.zaxis)};
    const out = {...layout, template: {...base, layout: t}};
    for (const key of ["paper_bgcolor", "plot_bgcolor"]) if (out[key] === "white") out[key] = paper;
    return out;
  };

  // Narrow plots (a phone, a tablet's half-width column): the server wraps a title for 560 px a line
  // (demo/kit/text_size.py wrap_title); each line wider than the plot is wrapped again, the same way (at spaces, or
  // between any two characters of 中文, and after a "/" of a model's id), and the top margin and the height grow by
  // the lines added.
  const ruler = document.createElement("canvas").getContext("2d");
  // Where a line may not break (demo/kit/text_size.py breakable: the same rules): before closing punctuation, after
  // opening punctuation, on either side of an "=".
  const CLOSING = /^[，。、：；！？）」』】》〉”’…·)=]/, OPENING = /[（「『【《〈“‘(=]$/;
  const HAN = /^[\u2e80-\u9fff]$/, RUN_END = /[，。、：；！？）」』】》〉]$/;
  const PIECES = /[\u2e80-\u9fff\uff00-\uffef]|[^\s\u2e80-\u9fff\uff00-\uffef/]+\/?|\/|\s+/g;
  const fitTitle = (gd, layout) => {
    const title = layout.title, words = title && typeof title === "object" ? title.text : null;
    const t = layout.template?.layout?.title || {};
    if (typeof words !== "string" || /<(span|a)\s/i.test(words)) return layout;
    const size = title.font?.size || t.font?.size || 19;
    const x = title.x ?? t.x ?? 0.5, anchor = title.xanchor ?? t.xanchor ?? "auto";
    const share = anchor === "left" ? 1 - x : anchor === "right" ? x : 2 * Math.min(x, 1 - x);
    const room = gd.clientWidth * share - 8;
    ruler.font = `${size}px ${title.font?.family || t.font?.family || layout.template?.layout?.font?.family
      || getComputedStyle(gd).fontFamily}`;
    const width = (line) => ruler.measureText(line.replace(/<[^>]+>/g, "")).width, wide = (line) => width(line) > room;
    // Where a line of pieces (piece next) may end before its last piece, last first: [cut, the line up to it].
    const breaks = function* (parts, piece) {
      for (let cut = parts.length - 1; cut > 0; cut--) {
        const head = parts.slice(0, cut).join(""), next = parts.slice(cut).find((p) => p.trim()) || piece;
        if (head.trim() && !CLOSING.test(next) && !OPENING.test(head.trimEnd())) yield [cut, head];
      }
    };
    // Where a line that does not fit ends: inside a run of 中文, after the run's last "，" "：" "；", at its last
    // space or before its last "（", if that keeps half a line; where the next piece may not start a line, before
    // the glued pieces ("（τ = 0" moves whole); 0: nowhere (demo/kit/text_size.py _line_end, _word_end).
    const lineEnd = (parts, piece) => {
      if (CLOSING.test(piece) || OPENING.test(parts.join("").trimEnd())) {
        for (const [cut] of breaks(parts, piece)) return cut;
        return 0;
      }
      if (!(HAN.test(parts[parts.length - 1]) && HAN.test(piece))) return parts.length;
      for (const [cut, head] of breaks(parts, piece)) {
        if (RUN_END.test(parts[cut - 1]) || !parts[cut].trim() || OPENING.test(parts[cut][0])) {
          return width(head.trimEnd()) >= room / 2 ? cut : parts.length;
        }
      }
      return parts.length;
    };
    const given = words.split(/<br\s*\/?>/i), lines = [];
    for (const text of given) {
      let parts = [];
      for (const piece of wide(text) ? text.match(PIECES) || [] : [text]) {
        const line = parts.join(""), space = !piece.trim();
        const cut = line.trim() && !space && wide(line + piece) ? lineEnd(parts, piece) : 0;
        if (cut) {
          lines.push(parts.slice(0, cut).join("").trimEnd());
          parts = parts.slice(cut < parts.length && !parts[cut].trim() ? cut + 1 : cut);
        }
        if (parts.length || !space) parts.push(piece);
      }
      lines.push(parts.join("").trimEnd());
    }
    const grow = Math.ceil((lines.length - given.length) * size * 1.3);  // plotly's line spacing: 1.3 em
    if (!grow || room < 4 * size) return layout;
    const margin = {...(layout.margin || {})};
    margin.t = (margin.t ?? layout.template?.layout?.margin?.t ?? 80) + grow;
    const out = {...layout, title: {...title, text: lines.join("<br>")}, margin};
    if (typeof layout.height === "number") out.height = layout.height + grow;
    return out;
  };

  // A grid of small panels (demo/kit/figures.py subplot_grid, layout.meta.grid) gets fewer columns where each panel
  // would be narrower than PANEL_PX (one column on a phone); its panels keep their height, and the figure grows by
  // the rows added.
  const PANEL_PX = 150;
  const restack = (gd, layout) => {
    const grid = layout.meta?.grid, base = layout.template?.layout?.margin || {};
    const plot = gd.clientWidth - (layout.margin?.l ?? base.l ?? 80) - (layout.margin?.r ?? base.r ?? 80);
    const cols = grid ? Math.max(1, Math.floor(plot / PANEL_PX)) : 0;
    if (!grid || cols >= grid.cols || typeof layout.height !== "number") return layout;
    const before = Math.ceil(grid.panels / grid.cols), rows = Math.ceil(grid.panels / cols);
    const edges = (layout.margin?.t ?? base.t ?? 80) + (layout.margin?.b ?? base.b ?? 80);
    const scale = rows / before, vs = grid.vs / scale;  // the gap between rows keeps its pixels
    const out = {...layout, height: Math.round(edges + (layout.height - edges) * scale)};
    const w = (1 - grid.hs * (cols - 1)) / cols, h = (1 - vs * (rows - 1)) / rows;
    const clip = (v) => Math.min(1, Math.max(0, Math.round(v * 1e6) / 1e6));
    const notes = [...(layout.annotations || [])];
    for (let i = 0; i < grid.panels; i++) {
      const s = i ? String(i + 1) : "", left = (i % cols) * (w + grid.hs), top = 1 - Math.floor(i / cols) * (h + vs);
      out["xaxis" + s] = {...layout["xaxis" + s], domain: [clip(left), clip(left + w)]};
      out["yaxis" + s] = {...layout["yaxis" + s], domain: [clip(top - h), clip(top)]};
      if (notes[i]) notes[i] = {...notes[i], x: left + w / 2, y: top};
    }
    out.annotations = notes;
    return out;
  };

  // A row of labels over the plot's columns (layout.meta.column_labels: the annotations, one per column, e.g. the
  // layer × head map's H1…H12) keeps every k-th label where they would overlap: each shown one fits its k columns.
  const thinLabels = (gd, layout) => {
    const notes = layout.meta?.column_labels ? layout.annotations || [] : [];
    const base = layout.template?.layout?.margin || {};
    const plot = gd.clientWidth - (layout.margin?.l ?? base.l ?? 80) - (layout.margin?.r ?? base.r ?? 80);
    const family = layout.template?.layout?.font?.family || getComputedStyle(gd).fontFamily;
    const widest = Math.max(0, ...notes.map((n) => {
      ruler.font = `${n.font?.size || 12}px ${family}`;
      return ruler.measureText(String(n.text)).width;
    }));
    const every = notes.length ? Math.ceil((widest + 6) / (plot / notes.length)) : 1;
    if (every <= 1 || !(plot > 0)) return layout;
    return {...layout, annotations: notes.map((n, i) => i % every ? {...n, visible: false} : n)};
  };
  // A legend beside the plot (plotly's place for it: on the right) that would leave the plot narrower than
  // PLOT_MIN_PX (a phone: 135 px of a 320 px figure) goes under it, in rows at the figure's foot, and the figure
  // grows by its rows.
  const PLOT_MIN_PX = 260;
  const legendBelow = (gd, layout, data) => {
    const legend = layout.legend || {}, t = layout.template?.layout || {};
    const names = (data || []).filter((trace) => trace.showlegend !== false && trace.name != null)
      .map((trace) => String(trace.name).replace(/<[^>]+>/g, ""));
    const shown = layout.showlegend ?? names.length > 1;  // plotly's rule: a legend from two traces on
    if (!shown || !names.length || (legend.orientation ?? t.legend?.orientation) === "h"
        || typeof layout.height !== "number") return layout;
    const size = legend.font?.size || t.legend?.font?.size || t.font?.size || 15;
    ruler.font = `${size}px ${t.font?.family || getComputedStyle(gd).fontFamily}`;
    const entry = Math.max(...names.map((name) => ruler.measureText(name).width)) + 2.7 * size;  // + symbol, gaps
    const left = layout.margin?.l ?? t.margin?.l ?? 80;
    if (gd.clientWidth - left - entry - size >= PLOT_MIN_PX) return layout;
    const rows = Math.ceil(names.length / Math.max(1, Math.floor((gd.clientWidth - 16) / entry)));
    const grow = Math.ceil(rows * size * 1.6 + 8), margin = {...(layout.margin || {})};
    margin.b = (margin.b ?? t.margin?.b ?? 80) + grow;
    return {...layout, margin, height: layout.height + grow,
            legend: {...legend, orientation: "h", x: 0, xanchor: "left", y: 0, yref: "container", yanchor: "bottom"}};
  };
  const narrow = (gd, layout, data) => fitTitle(gd, thinLabels(gd, restack(gd, legendBelow(gd, layout, data))));
  // A figure's one colour bar beside the plot (a heatmap's, or a shared colour axis's) that would leave the plot
  // narrower than PLOT_MIN_PX (a phone: the attention's softmax map 91 px of a 326 px figure, its keys printed over
  // one another) lies under it instead, across the plot's width, and the figure grows by its height. Returns
  // {layout, data, bars}: a trace's bar is data, so ``bars`` holds the ones it moved as they were sent (kept on the
  // figure, gd.__plmBars, for the export and for a redraw at another width).
  const BAR_PX = 64;  // a bar beside the plot, with its tick labels and gap (plotly: 30 px thick, here 12–14)
  const SCALED = new Set(["heatmap", "contour", "histogram2d", "histogram2dcontour"]);  // a colour bar of their own
  const colorbarBelow = (gd, layout, data) => {
    const axes = Object.keys(layout).filter((key) => /^coloraxis\d*$/.test(key) && layout[key]?.showscale !== false);
    const traces = (data || []).map((trace, i) => i).filter((i) => SCALED.has(data[i].type) && !data[i].coloraxis
      && data[i].showscale !== false && data[i].visible !== false);
    const t = layout.template?.layout || {};
    if (axes.length + traces.length !== 1 || typeof layout.height !== "number") return {layout, data, bars: null};
    const left = layout.margin?.l ?? t.margin?.l ?? 80, right = layout.margin?.r ?? t.margin?.r ?? 80;
    if (gd.clientWidth - left - right - BAR_PX >= PLOT_MIN_PX) return {layout, data, bars: null};
    const size = t.font?.size || 12, thickness = 12, grow = Math.ceil(thickness + size * 1.4 + 14);
    const under = (bar) => ({...(bar || {}), orientation: "h", thickness, len: 1, lenmode: "fraction", x: 0.5,
                             xanchor: "center", y: 0, yref: "container", yanchor: "bottom", ypad: 6,
                             title: {...(bar?.title || {}), side: "top"}});
    const margin = {...(layout.margin || {})};
    margin.b = (margin.b ?? t.margin?.b ?? 80) + grow;
    const out = {...layout, margin, height: layout.height + grow};
    const axis = axes[0];
    if (axis) {
      return {layout: {...out, [axis]: {...layout[axis], colorbar: under(layout[axis].colorbar)}}, data, bars: null};
    }
    const i = traces[0];
    return {layout: out, data: data.map((trace, j) => j === i ? {...trace, colorbar: under(trace.colorbar)} : trace),
            bars: {[i]: data[i].colorbar}};
  };
  // Everything a narrow screen changes: {layout, data, bars}.
  const narrowed = (gd, layout, data) => {
    const below = colorbarBelow(gd, layout, data);
    return {...below, layout: narrow(gd, below.layout, below.data)};
  };
  // The figure's traces with the colour bars colorbarBelow moved put back as they were sent.
  const unbarred = (gd, data) => !gd.__plmBars || !data ? data
    : data.map((trace, i) => i in gd.__plmBars ? {...trace, colorbar: gd.__plmBars[i]} : trace);
  const shape = (layout) => JSON.stringify([layout.title, layout.height, layout.margin, layout.annotations,
    layout.legend,
    ...Object.keys(layout).filter((key) => /^[xy]axis\d*$/.test(key)).map((key) => layout[key]?.domain)]);
  // A figure whose width changed (a phone turned sideways or back, a window resized) is drawn again from the layout
  // it was sent with, where its narrow layout (the title's lines, the grid's columns, the labels shown) changes.
  // Not for a change under RESIZE_PX: a page scrollbar that comes and goes (15 px) could otherwise redraw a figure
  // whose new height brings the scrollbar back, again and again. Only once its width has settled for SETTLE_MS: a
  // page reflows in steps (Gradio's rows and tab bars follow the width a frame later), and a figure drawn at a
  // passing width less than RESIZE_PX from the last would keep that width's layout.
  const RESIZE_PX = 40, SETTLE_MS = 120;
  const redraw = (gd) => {
    const sent = gd.__plmSent;
    if (!sent || !gd.clientWidth || !gd.data || Math.abs(gd.clientWidth - (gd.__plmWidth || 0)) < RESIZE_PX
        || shape(narrowed(gd, sent.layout, unbarred(gd, gd.data)).layout) === gd.__plmShape) return;
    window.Plotly.react(gd, unbarred(gd, gd.data), sent.layout, sent.config);
  };
  const resized = new ResizeObserver((entries) => {
    for (const {target: gd} of entries) {
      clearTimeout(gd.__plmResize);
      gd.__plmResize = setTimeout(() => redraw(gd), SETTLE_MS);
    }
  });
  // Point labels (a projection's words) that plotly cuts off at the plot's edge: its autorange makes room for the
  // markers, not for their text. Once drawn, the axes' ranges widen by what the labels overhang, measured, until
  // every label is inside (a phone: "january" and "thursday" of a cluster at the edge); not on axes the learner has
  // zoomed or that are not plain numbers. The export puts plotly's own range back (gd.__plmFit).
  const FIT_TRIES = 3;
  const overhang = (gd) => {
    const area = gd.querySelector(".nsewdrag")?.getBoundingClientRect();
    const boxes = [...gd.querySelectorAll(".scatterlayer .textpoint text")].map((t) => t.getBoundingClientRect())
      .filter((b) => b.width > 0);
    if (!area || !boxes.length) return null;
    const out = {area, l: area.left - Math.min(...boxes.map((b) => b.left)),
                 r: Math.max(...boxes.map((b) => b.right)) - area.right,
                 t: area.top - Math.min(...boxes.map((b) => b.top)),
                 b: Math.max(...boxes.map((b) => b.bottom)) - area.bottom};
    return Math.max(out.l, out.r, out.t, out.b) > 1 ? out : null;
  };
  const plainRange = (axis) => axis && axis.autorange !== false && axis.type !== "log" && Array.isArray(axis.range)
    && axis.range.length === 2 && axis.range.every((v) => typeof v === "number") && axis.range[0] < axis.range[1];
  const fitLabels = async (gd) => {
    if (Object.keys(gd.layout || {}).some((key) => /^[xy]axis\d+$/.test(key))) return;  // one plot only
    if (!gd.__plmFitWatched && gd.on) {  // a double click puts plotly's range back: fitted again
      gd.__plmFitWatched = true;
      gd.on("plotly_relayout", (change) => {
        if (change?.["xaxis.autorange"] || change?.["yaxis.autorange"]) fitLabels(gd).catch(() => {});
      });
    }
    for (let i = 0; i < FIT_TRIES; i++) {
      const over = overhang(gd), x = gd.layout.xaxis, y = gd.layout.yaxis;
      if (!over || !(i ? gd.__plmFit : plainRange(x) && plainRange(y))) return;
      const [x0, x1] = x.range, [y0, y1] = y.range;
      const ux = (x1 - x0) / over.area.width, uy = (y1 - y0) / over.area.height, more = (v) => Math.max(0, v) + 2;
      const fit = {x: [x0 - more(over.l) * ux, x1 + more(over.r) * ux],
                   y: [y0 - more(over.b) * uy, y1 + more(over.t) * uy]};
      gd.__plmFit = fit;
      await window.Plotly.relayout(gd, {"xaxis.range": fit.x, "yaxis.range": fit.y});
    }
  };
  const PNG_TITLE = "Download plot as a png";  // plotly's own camera button's words (and its 中文 in common.plotly_*)

  const wrap = (P) => {
    if (!P || !P.react || P.__svgExport) return P;
    svgButton.icon = pngButton.icon = P.Icons.camera;
    const react = P.react;
    P.react = function (gd, data, layout, config) {
      const lang = language(), sent = config;
      svgButton.title = titles[lang];
      pngButton.title = lang === "zh" ? zhModebar.dictionary[PNG_TITLE] || PNG_TITLE : PNG_TITLE;
      dataButton.title = access[lang].data_button;
      if (config && config.toImageButtonOptions) {
        config = {...config, modeBarButtonsToRemove: [...(config.modeBarButtonsToRemove || []), "toImage"],
                  modeBarButtonsToAdd: [pngButton, svgButton, dataButton]};
      }
      if (config && lang === "zh") config = {...config, locale: "zh-CN", locales: {"zh-CN": zhModebar}};
      if (layout) {  // drawn hidden (a tab not open yet: no width), it is laid out when it is shown
        const given = layout;
        gd.__plmBars = null;
        if (gd.clientWidth) ({layout, data, bars: gd.__plmBars} = narrowed(gd, layout, data));
        gd.__plmSent = {layout: given, config: sent};
        gd.__plmGiven = layout === given ? null : given;
        gd.__plmShape = shape(layout);
        gd.__plmWidth = gd.clientWidth;
        if (!gd.__plmObserved) { resized.observe(gd); gd.__plmObserved = true; }
      }
      if (layout && document.body.classList.contains("dark")) layout = darken(layout, gd);
      const drawn = react.call(this, gd, data, layout, config);
      gd.__plmFit = null;
      Promise.resolve(drawn).then(() => { describe(gd); return fitLabels(gd); }).catch(() => {});
      return drawn;
    };
    P.__svgExport = true;
    return P;
  };
  let plotly = wrap(window.Plotly);  // Gradio loads plotly.js lazily and then sets window.Plotly
  Object.defineProperty(window, "Plotly", {configurable: true, get: () => plotly, set: (P) => { plotly = wrap(P); }});
  // A modebar button is an <a> without href: Enter and Space press it, as they press a button.
  document.addEventListener("keydown", (event) => {
    const button = event.target.closest?.(".modebar-btn");
    if (!button || (event.key !== "Enter" && event.key !== " ")) return;
    event.preventDefault();
    button.dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true, view: window}));
  });
})();
