// The teacher's kit in the browser (issue #54; demo/kit/teacher.py says how the pieces fit). Served at its own address and
// cached; its words come from window.plmKitConfig in <head>.
// - take(json): the server's answer to a preset bar's "Add to slides" / "Link to this view" (the bar's value).
// - the deck lives in IndexedDB (a deck of figures outgrows localStorage's few megabytes); the panel lists it, moves
//   and deletes slides, and downloads it as .pptx (POST to the server, which writes the file and keeps nothing).
// - oneClick(kind): the guided tour's or a tab's lesson deck: the server sends each slide's figure JSON, the browser
//   draws it off screen with plotly.js and exports it at the slide size, as the PNG export does.
(() => {
  if (window.plmKit) return;
  const config = window.plmKitConfig;
  const lang = () => (/^zh/i.test(navigator.language || "") ? "zh" : "en");
  const say = (key, fields = {}) => config.words[lang()][key].replace(/\{(\w+)\}/g, (_, k) => fields[k] ?? "");
  const DB = "plm-kit", STORE = "slides";

  // -- storage ---------------------------------------------------------------------------------------------------
  const open = () => new Promise((resolve, reject) => {
    if (!window.indexedDB) { reject(new Error(say("storage_missing"))); return; }
    const request = indexedDB.open(DB, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE, {keyPath: "id", autoIncrement: true});
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(new Error(say("storage_missing")));
  });
  const run = async (mode, work) => {
    const db = await open();
    return new Promise((resolve, reject) => {
      const tx = db.transaction(STORE, mode);
      const result = work(tx.objectStore(STORE));
      tx.oncomplete = () => { db.close(); resolve(result && "result" in result ? result.result : undefined); };
      tx.onerror = () => { db.close(); reject(tx.error); };
    });
  };
  const all = async () => ((await run("readonly", (s) => s.getAll())) || []).sort((a, b) => a.order - b.order);
  const put = (slide) => run("readwrite", (s) => s.put(slide));
  const remove = (id) => run("readwrite", (s) => s.delete(id));
  const clear = () => run("readwrite", (s) => s.clear());

  // -- what is on screen -----------------------------------------------------------------------------------------
  const shown = (el) => !!el && el.offsetParent !== null && el.getBoundingClientRect().height > 0;
  const exportOptions = () => ({format: "png", width: config.export.width, height: config.export.height,
                                scale: config.export.scale});
  const tableRows = (el) => {
    const table = el.querySelector("table");
    if (!table) return null;
    const rows = [...table.querySelectorAll("tr")].map((tr) => [...tr.querySelectorAll("th, td")]
      .map((cell) => cell.innerText.replace(/\s+/g, " ").trim()))
      .filter((row) => row.some(Boolean));
    return rows.length > 1 ? rows : null;
  };
  const plotly = async () => {
    if (window.Plotly) return window.Plotly;
    const main = [...document.scripts].find((s) => /\/assets\/index-[^/]*\.js$/.test(s.src));
    if (main && config.chunk) await import(new URL(config.chunk, main.src).href).catch(() => {});
    for (let i = 0; i < 100 && !window.Plotly; i++) await new Promise((r) => setTimeout(r, 100));
    return window.Plotly;
  };

  // -- messages --------------------------------------------------------------------------------------------------
  let toastTimer = 0;
  const toast = (message, bad = false) => {
    let box = document.querySelector(".kit-toast");
    if (!box) {
      box = document.createElement("div");
      box.className = "kit-toast";
      box.setAttribute("role", "status");
      box.setAttribute("aria-live", "polite");
      document.body.appendChild(box);
    }
    box.textContent = message;
    box.classList.toggle("kit-bad", bad);
    box.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { box.hidden = true; }, 6000);
  };

  // -- a view's slide or link ------------------------------------------------------------------------------------
  const here = () => window.location.origin + window.location.pathname;
  const take = async (json) => {
    let answer;
    try { answer = JSON.parse(json); } catch (e) { return; }
    if (answer.error) { toast(answer.error, true); return; }
    if (answer.mode === "link") {
      const url = here() + answer.link;
      if (navigator.clipboard) navigator.clipboard.writeText(url).catch(() => {});
      window.history.replaceState(null, "", answer.link);
      toast(say("link_copied"));
      return;
    }
    const made = [];
    for (const el of [...document.querySelectorAll("." + answer.spots)].filter(shown)) {
      const gd = el.querySelector(".js-plotly-plot");
      if (gd && gd.data && gd.data.length) {
        const P = await plotly();
        // as the server laid it out, as the PNG button saves it: not a phone's or a narrow window's re-layout
        made.push({image: await P.toImage(window.plmSlideFigure ? window.plmSlideFigure(gd) : gd, exportOptions())});
        continue;
      }
      const rows = tableRows(el);
      if (rows) made.push({table: rows});
    }
    if (!made.length) { toast(say("nothing_to_add"), true); return; }
    try {
      let order = Date.now();
      for (const piece of made) {
        await put({...piece, order: order++, title: answer.title, caption: answer.caption, notes: answer.notes,
                   link: answer.link, lang: answer.lang});
      }
    } catch (e) { toast(String(e.message || e), true); return; }
    const total = (await all()).length;
    toast(say("added", {count: made.length, total}));
    refresh();
  };

  // -- the .pptx -------------------------------------------------------------------------------------------------
  const download = async (slides, title = "") => {
    const body = JSON.stringify({lang: lang(), link: here(), title, slides: slides.map((s) => ({
      title: s.title, caption: s.caption, notes: s.notes, link: s.link, image: s.image, table: s.table}))});
    const response = await fetch(config.deck + "?lang=" + lang(), {method: "POST", body,
                                                                  headers: {"Content-Type": "application/json"}});
    if (!response.ok) {
      let message = "";
      try { message = (await response.json()).message; } catch (e) { message = response.statusText; }
      throw new Error(message);
    }
    const blob = await response.blob();
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = "plm-explorer-deck.pptx";
    document.body.appendChild(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
    return blob.size;
  };
  // A one-click deck: the server's plan, each figure drawn off screen and exported, then the file.
  const oneClick = async (kind, tab = "") => {
    toast(say("building", {k: 0, n: "…"}));
    try {
      const response = await fetch(`${config.plan}?kind=${kind}&tab=${encodeURIComponent(tab)}&lang=${lang()}`);
      const plan = await response.json();
      if (!response.ok) throw new Error(plan.message);
      const P = await plotly();
      const box = document.createElement("div");
      box.style.cssText = "position:fixed;left:-10000px;top:0;width:1600px;height:900px";
      document.body.appendChild(box);
      const slides = [];
      for (const [k, slide] of plan.slides.entries()) {
        toast(say("building", {k: k + 1, n: plan.slides.length}));
        const made = {...slide};
        if (slide.figure) {
          const figure = JSON.parse(slide.figure);
          await P.newPlot(box, figure.data, {...figure.layout, width: config.export.width,
                                             height: config.export.height}, {staticPlot: true});
          made.image = await P.toImage(box, exportOptions());
          P.purge(box);
          delete made.figure;
        }
        slides.push(made);
      }
      box.remove();
      await download(slides, plan.title);
      toast(say("added", {count: slides.length, total: slides.length}));
      return slides.length;
    } catch (e) {
      toast(say("failed", {detail: String(e.message || e)}), true);
      throw e;
    }
  };

  // -- the panel -------------------------------------------------------------------------------------------------
  let panel = null;
  const currentTab = () => document.querySelector('button[role="tab"][aria-selected="true"]')?.dataset.tabId || "";
  const esc = (v) => String(v ?? "").replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");
  const build = () => {
    panel = document.createElement("div");
    panel.className = "kit-deck";
    panel.innerHTML = `<button type="button" class="kit-toggle" aria-expanded="false"></button>`
      + `<div class="kit-body" hidden><ol class="kit-list"></ol><p class="kit-empty"></p>`
      + `<div class="kit-actions"><button type="button" class="kit-download"></button>`
      + `<button type="button" class="kit-clear"></button><button type="button" class="kit-tour"></button>`
      + `<button type="button" class="kit-lesson"></button></div></div>`;
    document.body.appendChild(panel);
    panel.addEventListener("click", async (event) => {
      const button = event.target.closest("button");
      if (!button) return;
      const body = panel.querySelector(".kit-body");
      if (button.classList.contains("kit-toggle")) {
        body.hidden = !body.hidden;
        button.setAttribute("aria-expanded", String(!body.hidden));
        return;
      }
      try {
        if (button.classList.contains("kit-download")) await download(await all());
        else if (button.classList.contains("kit-clear")) await clear();
        else if (button.classList.contains("kit-tour")) await oneClick("tour");
        else if (button.classList.contains("kit-lesson")) await oneClick("lesson", currentTab());
        else if (button.dataset.move) {
          const slides = await all(), i = slides.findIndex((s) => s.id === Number(button.dataset.id));
          const j = i + Number(button.dataset.move);
          if (i >= 0 && j >= 0 && j < slides.length) {
            [slides[i].order, slides[j].order] = [slides[j].order, slides[i].order];
            await put(slides[i]);
            await put(slides[j]);
          }
        } else if (button.dataset.remove) await remove(Number(button.dataset.remove));
      } catch (e) { toast(String(e.message || e), true); }
      refresh();
    });
  };
  const refresh = async () => {
    if (!panel) build();
    let slides = [];
    try { slides = await all(); } catch (e) { /* no IndexedDB: the panel says so when used */ }
    // Folded, the button is the film and the count (it then fits in a laptop's margin, beside the content, instead
    // of over it); its words show on hover, on focus and while open, and are always its name and tooltip.
    const toggle = panel.querySelector(".kit-toggle"), words = say("panel", {count: slides.length});
    toggle.innerHTML = `<span class="kit-short">🎞 ${slides.length}</span><span class="kit-long">${esc(words)}</span>`;
    toggle.setAttribute("aria-label", words);
    toggle.title = words;
    panel.querySelector(".kit-empty").textContent = slides.length ? "" : say("panel_empty");
    panel.querySelector(".kit-download").textContent = say("download");
    panel.querySelector(".kit-download").disabled = !slides.length;
    panel.querySelector(".kit-clear").textContent = say("clear");
    panel.querySelector(".kit-clear").disabled = !slides.length;
    panel.querySelector(".kit-tour").textContent = say("tour_deck");
    panel.querySelector(".kit-lesson").textContent = say("lesson_deck");
    panel.querySelector(".kit-list").innerHTML = slides.map((s) => `<li class="kit-slide" data-id="${s.id}">`
      + (s.image ? `<img src="${s.image}" alt="">` : `<span class="kit-table-mark">▦</span>`)
      + `<span class="kit-slide-title">${esc(s.title)}</span>`
      + `<button type="button" data-move="-1" data-id="${s.id}" aria-label="${esc(say("up"))}">↑</button>`
      + `<button type="button" data-move="1" data-id="${s.id}" aria-label="${esc(say("down"))}">↓</button>`
      + `<button type="button" data-remove="${s.id}" aria-label="${esc(say("delete"))}">✕</button></li>`).join("");
  };

  window.plmKit = {take, all, clear, download, oneClick, refresh};
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", refresh);
  else refresh();
})();
