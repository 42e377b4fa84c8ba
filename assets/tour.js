// The guided tour (demo/kit/tour.py): gr.HTML's js_on_load for the header's "Start the tour" button. It adds the
// tour's panel to the page and runs the tour; props: stops, ui (words in both languages), storage_key.
if (!window.plmTour) {
  const lang = (/^zh/i.test(navigator.language || (navigator.languages || [])[0] || '') ? 'zh' : 'en');  // demo/kit/i18n.py BROWSER_LANGUAGE_JS
  const stops = props.stops, ui = props.ui, N = stops.length, KEY = props.storage_key;
  const words = (key) => ui[key][lang];
  const clamp = (k) => Math.min(Math.max(1, Math.round(Number(k)) || 1), N);
  const load = () => { try { return JSON.parse(localStorage.getItem(KEY)) || {}; } catch (e) { return {}; } };
  const save = () => { try { localStorage.setItem(KEY, JSON.stringify(state)); } catch (e) {} };
  let state = {stop: 1, active: false, ...load()};
  state.stop = clamp(state.stop);
  let token = 0;
  const WATCH_MS = 20000;

  const panel = document.createElement("aside");
  panel.className = "tour-panel";
  panel.hidden = true;
  panel.setAttribute("aria-label", words("region"));
  panel.innerHTML = `<div class="tour-head"><span class="tour-count" aria-live="polite"></span>`
    + `<span class="tour-keys">${words("keys")}</span>`
    + `<button type="button" class="tour-fold" aria-expanded="true"></button>`
    + `<button type="button" class="tour-leave" aria-label="${words("leave")}" title="${words("leave")}">✕</button>`
    + `</div>`
    + `<div class="tour-body"><h2 class="tour-title"></h2><p class="tour-text"></p><p class="tour-section"></p></div>`
    + `<div class="tour-nav"><button type="button" class="tour-back">${words("back")}</button>`
    + `<button type="button" class="tour-next"></button></div>`;
  // Inside Gradio's .contain: Gradio applies our stylesheet's @media rules (the phone's sheet) only in there.
  (document.querySelector(".gradio-container .contain") || document.body).appendChild(panel);
  const $ = (selector) => panel.querySelector(selector);

  const shown = (el) => !!el && el.offsetParent !== null && el.getBoundingClientRect().height > 0;
  const selected = (id) => [...document.querySelectorAll('button[role="tab"][aria-selected="true"]')]
    .some((b) => b.dataset.tabId === id && b.offsetParent !== null);
  const busy = () => !!document.querySelector(".wrap.generating, .progress-text, .eta-bar");
  const spot = (stop) => stop.spots.map((name) => [...document.querySelectorAll("." + name)].find(shown))
    .find(Boolean);
  // The stop's result has arrived: no output in it still shows Gradio's "Empty value" placeholder, and every plot in
  // it has data. A trainer's link shows no progress on the plot while it trains (the NNLM: 2 s), so "nothing is
  // computing" alone said ready too soon, and the plot then grew under the panel and scrolled its top off screen.
  const filled = (el) => !el.querySelector('[aria-label="Empty value"]')
    && [...el.querySelectorAll(".js-plotly-plot")].every((plot) => (plot.data || []).length > 0);
  const unmark = () => document.querySelectorAll(".tour-highlight")
    .forEach((el) => el.classList.remove("tour-highlight"));
  const room = () => { document.body.style.paddingBottom = state.active ? panel.offsetHeight + 24 + "px" : ""; };

  const startLabel = () => {
    const text = state.stop > 1 && !state.active
      ? words("resume").replace("{k}", state.stop).replace("{n}", N) : words("start");
    document.querySelectorAll(".tour-start").forEach((b) => { b.textContent = text; });
  };
  const render = () => {
    const stop = stops[state.stop - 1];
    panel.dataset.stop = String(state.stop);
    panel.dataset.state = "loading";
    $(".tour-count").textContent = words("count").replace("{k}", state.stop).replace("{n}", N);
    $(".tour-title").innerHTML = stop.title[lang];
    $(".tour-text").innerHTML = (stop.text || ui.check_text)[lang];  // a check stop: the words all of them share
    $(".tour-section").textContent = words("seed").replace("{section}", stop.section);
    $(".tour-back").disabled = state.stop === 1;
    $(".tour-next").textContent = state.stop === N ? words("finish") : words("next");
    panel.hidden = false;
    room();
    startLabel();
  };
  // Outline the stop's result once its tab and sub-tab are selected and nothing is computing; a preset whose result
  // was computed before may answer at once, so "nothing is computing" counts only after the answer could have come.
  const settle = (stop, mine) => {
    const began = performance.now();
    const tick = () => {
      if (mine !== token) return;
      const waited = performance.now() - began;
      const target = spot(stop);
      const ready = selected(stop.tab) && (!stop.sub || selected(stop.sub)) && !busy() && target && filled(target)
        && waited > 600;
      if (!ready && waited < 120000) { setTimeout(tick, 150); return; }
      const fallback = [...document.querySelectorAll(".tabitem")].filter(shown).pop();
      const el = target || fallback;
      unmark();
      if (!el) { panel.dataset.state = "missing"; return; }
      el.classList.add("tour-highlight");
      el.scrollIntoView({block: "start", behavior: "auto"});
      // Figures above it may still be drawing and push it down (or up): keep it in place until the page stops
      // moving, unless the learner scrolls first. Once ready, for WATCH_MS more, a late change of the layout (a
      // figure drawn again at its final size) that takes it off the screen, or under the panel, brings it back.
      let last = null, still = 0;
      const steady = performance.now();
      const hold = () => {
        if (mine !== token) return;
        const top = Math.round(el.getBoundingClientRect().top);
        still = top === last ? still + 1 : 0;
        last = top;
        if (panel.dataset.state === "loading" && (still >= 4 || performance.now() - steady > 6000 || moved)) {
          panel.dataset.state = target ? "ready" : "missing";
        }
        if (moved) return;
        const away = panel.dataset.state === "loading" ? Math.abs(top - 16) > 4
          : top < 0 || top >= panel.getBoundingClientRect().top;
        if (away && still === 0) el.scrollIntoView({block: "start", behavior: "auto"});
        if (performance.now() - steady < 6000 + WATCH_MS) setTimeout(hold, 150);
      };
      let moved = false;
      const stay = () => { moved = true; };
      // the learner scrolls or works in the page: the tour lets go
      ["wheel", "touchmove", "pointerdown", "keydown"]
        .forEach((name) => window.addEventListener(name, stay, {once: true, passive: true}));
      hold();
    };
    tick();
  };
  const go = (k, navigate = true) => {
    state = {stop: clamp(k), active: true};
    save();
    unmark();
    render();
    const stop = stops[state.stop - 1];
    const href = stop.link + "&tour=" + state.stop;
    if (navigate) {
      if (window.plmOpenLink) window.plmOpenLink(href);
      else window.history.replaceState(null, "", href);  // the page's load reads the address next and opens it
    }
    if (stop.check && window.plmYourTurn) window.plmYourTurn.open(stop.check, false);  // assets/your_turn.js
    settle(stop, ++token);
  };
  const leave = () => {
    token++;
    state = {stop: state.stop, active: false};
    save();
    unmark();
    panel.hidden = true;
    room();
    const url = new URL(window.location.href);
    if (url.searchParams.has("tour")) {
      url.searchParams.delete("tour");
      window.history.replaceState(null, "", url.pathname + url.search);
    }
    startLabel();
  };
  const fold = () => {
    const folded = panel.classList.toggle("tour-folded");
    $(".tour-fold").textContent = folded ? "▴" : "▾";
    $(".tour-fold").setAttribute("aria-label", folded ? words("unfold") : words("fold"));
    $(".tour-fold").setAttribute("aria-expanded", String(!folded));
    room();
  };

  panel.addEventListener("click", (event) => {
    const button = event.target.closest("button");
    if (!button || button.disabled) return;
    if (button.classList.contains("tour-back")) go(state.stop - 1);
    else if (button.classList.contains("tour-next")) state.stop === N ? leave() : go(state.stop + 1);
    else if (button.classList.contains("tour-leave")) leave();
    else if (button.classList.contains("tour-fold")) fold();
  });
  document.addEventListener("click", (event) => {
    const start = event.target.closest?.("[data-tour-start], a[href^='?tour=']");
    if (!start || event.defaultPrevented || event.ctrlKey || event.metaKey || event.shiftKey || event.button) return;
    event.preventDefault();
    const href = start.getAttribute("href");
    go(href ? new URLSearchParams(href).get("tour") : state.stop);
    $(".tour-next").focus({preventScroll: true});  // a keyboard learner goes on from the panel, not the page's end
  });
  document.addEventListener("keydown", (event) => {
    if (!state.active || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    const where = event.target;
    const typing = "input, textarea, select, [contenteditable], [role=slider], [role=tab], [role=listbox]";
    if (where.closest?.(typing)) return;
    if (event.key === "ArrowRight" && state.stop < N) { event.preventDefault(); go(state.stop + 1); }
    else if (event.key === "ArrowLeft" && state.stop > 1) { event.preventDefault(); go(state.stop - 1); }
    else if (event.key === "Escape") { event.preventDefault(); leave(); }
  });
  new ResizeObserver(room).observe(panel);
  fold(); fold();  // the fold button's words and state
  window.plmTour = {go, leave, state: () => ({...state}), stops: N};

  // Where the learner was: ?tour=k wins (the address may already open its preset: a reload); else a tour left open
  // goes on at its stop, unless the address opens another link (then the header offers to resume).
  const query = new URLSearchParams(window.location.search);
  const asked = query.get("tour");
  if (asked && /^[0-9]+$/.test(asked)) {
    const stop = stops[clamp(asked) - 1];
    go(asked, !(query.get("tab") === stop.tab && query.get("preset") === stop.preset));
  } else if (state.active && !query.get("tab")) {
    go(state.stop);
  } else {
    state.active = false;
    startLabel();
  }
}
