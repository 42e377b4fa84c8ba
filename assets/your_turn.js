// "Your turn" (issue #51): the browser side of demo/kit/your_turn.py, fetched once from its own address (and cached), after
// <head> set window.plmYourTurnConfig = {words: {en, zh}, key, checks: {tab: [slug…]}, tabs: {tab: {en, zh}}} and
// ran assets/your_turn_loader.js, which queued the blocks' calls until now.
//
// Every question goes to the server through Gradio's REST route (/gradio_api/call/<name>), the route gradio_client
// uses: checks_list, check_setup, check_answer. Nothing is graded here. The learner's progress (tried / right per
// check) stays in this browser, in localStorage, and is shown on the Overview's map.
(() => {
  if (window.plmYourTurn && !window.plmYourTurn.queue) return;
  const cfg = window.plmYourTurnConfig;
  const KEY = cfg.key;
  const lang = () => (/^zh/i.test(navigator.language || (navigator.languages || [])[0] || "") ? "zh" : "en");
  const fill = (template, fields) => String(template).replace(/\{(\w+)\}/g, (_, k) => (k in fields ? fields[k] : `{${k}}`));
  const words = (key, fields = {}) => fill(cfg.words[lang()][key], fields);
  const esc = (v) => String(v ?? "").replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");
  const tabOf = (slug) => Object.keys(cfg.checks).find((tab) => cfg.checks[tab].includes(slug));
  let uid = 0;

  // -- the server: the same route and endpoints as gradio_client ---------------------------------------------------
  const base = () => String(window.gradio_config?.root || (location.origin + location.pathname)).replace(/\/+$/, "");
  const call = async (name, data) => {
    const url = `${base()}/gradio_api/call/${name}`;
    const posted = await fetch(url, {method: "POST", headers: {"Content-Type": "application/json"},
                                     body: JSON.stringify({data}), credentials: "same-origin"});
    if (!posted.ok) throw new Error(words("failed"));
    const {event_id} = await posted.json();
    const stream = await fetch(`${url}/${event_id}`, {credentials: "same-origin"});
    const body = await stream.text();
    let event = null, payload = null;
    for (const block of body.split(/\n\n/)) {
      const m = /^event: *(\w+)\s*\ndata: *(.*)$/s.exec(block.trim());
      if (m && m[1] !== "heartbeat") { event = m[1]; payload = m[2]; }
    }
    let parsed = null;
    try { parsed = JSON.parse(payload); } catch (e) { parsed = payload; }
    if (event === "complete") return Array.isArray(parsed) ? parsed[0] : parsed;
    const message = typeof parsed === "string" ? parsed : (parsed?.error || parsed?.message || "");
    throw new Error(message && message !== "null" ? message : words("failed"));
  };
  let listed = null;  // one checks_list per page and language
  const list = () => (listed ||= call("checks_list", [lang()]).catch((e) => { listed = null; throw e; }));

  // -- progress: localStorage only ------------------------------------------------------------------------------------
  const progress = () => { try { return JSON.parse(localStorage.getItem(KEY)) || {}; } catch (e) { return {}; } };
  const record = (slug, right) => {
    const all = progress();
    all[slug] = {tried: true, right: !!(all[slug]?.right || right)};
    try { localStorage.setItem(KEY, JSON.stringify(all)); } catch (e) {}
    window.dispatchEvent(new CustomEvent("plm-checks-changed"));
  };
  const mark = (slug) => {
    const p = progress()[slug];
    return p?.right ? ["right", "✓", words("dot_right")] : p?.tried ? ["wrong", "✗", words("dot_wrong")]
      : ["untried", "○", words("dot_untried")];
  };

  // -- one check's form -------------------------------------------------------------------------------------------------
  const control = (setup, name) => {
    const options = setup.options.map((o, i) => ({value: o, shown: setup.shown[i] ?? o, index: i}));
    if (setup.kind === "choice") {
      return `<div class="yt-choices" role="radiogroup" aria-label="${esc(words("prediction"))}">`
        + options.map((o) => `<label class="yt-option"><input type="radio" name="${name}" value="${o.index}"> `
          + `<span>${esc(o.shown)}</span></label>`).join("") + "</div>";
    }
    if (setup.kind === "token") {
      return `<p class="yt-hint">${esc(words("token_hint"))}</p>`
        + `<div class="yt-tokens" role="radiogroup" aria-label="${esc(words("prediction"))}">`
        + options.map((o) => `<label class="yt-token"><input type="radio" name="${name}" value="${o.index}">`
          + `<span>${esc(o.shown)}</span></label>`).join("") + "</div>";
    }
    if (setup.kind === "number") {
      const low = setup.low ?? 0, high = setup.high ?? 1;
      const step = (high - low) / 1000;
      return `<p class="yt-hint">${esc(words("number_hint", {low, high}))}</p><div class="yt-number">`
        + `<input type="range" min="${low}" max="${high}" step="${step}" value="${low}" `
        + `aria-label="${esc(words("prediction"))}">`
        + `<input type="number" step="any" inputmode="decimal" aria-label="${esc(words("prediction"))}"></div>`;
    }
    return `<p class="yt-hint">${esc(words("order_hint"))}</p><ol class="yt-order">`
      + options.map((o) => `<li data-value="${esc(o.value)}"><span class="yt-item">${esc(o.shown)}</span>`
        + `<button type="button" class="yt-move" data-move="-1" aria-label="${esc(words("move_up"))}: ${esc(o.shown)}">↑</button>`
        + `<button type="button" class="yt-move" data-move="1" aria-label="${esc(words("move_down"))}: ${esc(o.shown)}">↓</button>`
        + "</li>").join("") + "</ol>";
  };
  const predictionOf = (box, setup) => {
    if (setup.kind === "choice") {
      const picked = box.querySelector(".yt-choices input:checked");
      return picked ? setup.options[Number(picked.value)] : null;
    }
    if (setup.kind === "token") {
      const picked = box.querySelector(".yt-tokens input:checked");
      return picked ? Number(picked.value) : null;
    }
    if (setup.kind === "number") return box.querySelector(".yt-number input[type=number]").value;
    return [...box.querySelectorAll(".yt-order li")].map((li) => li.dataset.value);
  };
  // Put back what the learner had predicted after the form is drawn again (their own text, another language)
  const restore = (box, setup, kept) => {
    if (kept == null) return;
    if (setup.kind === "choice" || setup.kind === "token") {
      const index = setup.kind === "choice" ? setup.options.indexOf(kept) : Number(kept);
      const input = box.querySelectorAll(".yt-answer input[type=radio]")[index];
      if (input && index >= 0) input.checked = true;
    } else if (setup.kind === "number") {
      box.querySelector(".yt-number input[type=number]").value = kept;
      const range = box.querySelector(".yt-number input[type=range]");
      if (kept !== "" && isFinite(Number(kept))) range.value = kept;
    } else if (Array.isArray(kept) && [...kept].sort().join("\n") === [...setup.options].sort().join("\n")) {
      const list = box.querySelector(".yt-order");
      const items = Object.fromEntries([...list.children].map((li) => [li.dataset.value, li]));
      kept.forEach((value) => list.appendChild(items[value]));
    }
  };

  const setupHtml = (setup) => {
    const settings = Object.entries(setup.settings || {}).map(([k, v]) => `${esc(k)} = ${esc(v)}`).join(" · ");
    return `<dl class="yt-setup">`
      + (setup.kind === "token" ? "" : `<dt>${esc(words("input"))}</dt><dd><pre class="yt-text">${esc(setup.text)}</pre></dd>`)
      + `<dt>${esc(words("model"))}</dt><dd><code>${esc(setup.model)}</code></dd>`
      + (settings ? `<dt>${esc(words("settings"))}</dt><dd>${settings}</dd>` : "")
      + (setup.on_own_text ? `<dt></dt><dd class="yt-on-own">${esc(words("own_on"))}</dd>` : "") + `</dl>`;
  };

  // Each answer shown counts up data-shown on the live region (for tests and tools: a new answer, not the last one)
  const shownOnce = (out) => { out.dataset.shown = String(Number(out.dataset.shown || 0) + 1); };
  const showResult = (box, result) => {
    const out = box.querySelector(".yt-result");
    shownOnce(out);
    if (result.missing) {
      out.innerHTML = `<div class="yt-card">${result.card}</div>`;
      return;
    }
    const right = result.right;
    out.innerHTML = `<p class="yt-verdict ${right ? "yt-is-right" : "yt-is-wrong"}"><strong>`
      + `${right ? "✓ " + esc(words("right")) : "✗ " + esc(words("wrong"))}</strong> ${esc(result.verdict)}</p>`
      + (result.figure ? `<div class="yt-figure">${result.figure}</div>` : "")
      + `<p class="yt-why"><strong>${esc(words("why"))}</strong> ${esc(result.explanation)}</p>`;
    record(result.slug, right);
  };
  const showError = (box, message) => {
    const out = box.querySelector(".yt-result");
    shownOnce(out);
    out.innerHTML = `<p class="yt-error"><strong>⚠</strong> ${esc(message)}</p>`;
  };

  const drawForm = (box, setup, kept) => {
    const name = `yt-${setup.slug}-${++uid}`;
    const form = box.querySelector(".yt-form");
    form.innerHTML = setupHtml(setup)
      + `<fieldset class="yt-answer"><legend>${esc(words("prediction"))}</legend>${control(setup, name)}</fieldset>`
      + `<div class="yt-actions"><button type="button" class="yt-check-button lg primary">${esc(words("check"))}</button></div>`
      + `<div class="yt-result" role="status" aria-live="polite"></div>`
      + (setup.own_text ? `<details class="yt-own"${setup.on_own_text ? " open" : ""}><summary>${esc(words("own_title"))}</summary>`
        + `<p class="yt-hint">${esc(setup.own_hint)}</p>`
        + `<textarea class="yt-own-text" rows="3" aria-label="${esc(words("own_title"))}">${esc(box.dataset.ownDraft || "")}</textarea>`
        + `<div class="yt-actions"><button type="button" class="yt-own-use">${esc(words("own_use"))}</button>`
        + (setup.on_own_text ? `<button type="button" class="yt-own-back">${esc(words("own_back"))}</button>` : "")
        + `</div></details>` : "");
    restore(form, setup, kept);
    box.setup = setup;
  };

  const loadSetup = async (box, own) => {
    const slug = box.dataset.slug;
    const kept = box.setup ? predictionOf(box, box.setup) : null;
    if (!box.setup) box.querySelector(".yt-form").innerHTML = `<p class="yt-hint">${esc(words("loading"))}</p>`;
    try {
      const setup = await call("check_setup", [slug, own]);
      box.own = own;
      drawForm(box, setup, kept);
    } catch (e) {
      if (box.setup) showError(box, e.message);  // the form and the prediction stay as they were
      else box.querySelector(".yt-form").innerHTML = `<p class="yt-error" role="alert">⚠ ${esc(e.message)}</p>`;
    }
  };

  const onClick = async (event) => {
    const box = event.target.closest(".yt-check");
    const button = event.target.closest("button");
    if (!box || !button || button.disabled) return;
    if (button.classList.contains("yt-move")) {
      const li = button.closest("li"), step = Number(button.dataset.move);
      const sibling = step < 0 ? li.previousElementSibling : li.nextElementSibling;
      if (!sibling) return;
      li.parentElement.insertBefore(li, step < 0 ? sibling : sibling.nextElementSibling);
      button.focus();
      return;
    }
    if (button.classList.contains("yt-own-use")) {
      const own = box.querySelector(".yt-own-text").value;
      box.dataset.ownDraft = own;
      await loadSetup(box, own);
      box.querySelector(".yt-own-text")?.focus();
      return;
    }
    if (button.classList.contains("yt-own-back")) {
      await loadSetup(box, null);
      return;
    }
    if (button.classList.contains("yt-check-button")) {
      const setup = box.setup;
      const prediction = predictionOf(box, setup);
      button.disabled = true;
      button.textContent = words("checking");
      box.querySelector(".yt-result").setAttribute("aria-busy", "true");
      try {
        showResult(box, await call("check_answer", [setup.slug, prediction, box.own ?? null]));
      } catch (e) {
        showError(box, e.message);
      } finally {
        button.disabled = false;
        button.textContent = words("check");
        box.querySelector(".yt-result").removeAttribute("aria-busy");
      }
    }
  };
  const onInput = (event) => {
    const number = event.target.closest(".yt-number");
    if (!number) return;
    const [range, box] = number.querySelectorAll("input");
    if (event.target === range) box.value = range.value;
    else if (box.value !== "" && isFinite(Number(box.value))) range.value = box.value;
  };

  // -- a tab's block ---------------------------------------------------------------------------------------------------
  const blocks = {};  // tab -> its <details class="your-turn">
  const fillBlock = async (block) => {
    if (block.dataset.filled) return block.filledPromise;
    block.dataset.filled = "1";
    const body = block.querySelector(".yt-list");
    body.innerHTML = `<p class="yt-hint">${esc(words("loading"))}</p>`;
    block.filledPromise = list().then((all) => {
      const mine = all.filter((c) => c.tab === block.dataset.tab);
      body.innerHTML = `<p class="yt-hint">${esc(words("open_hint"))}</p>` + mine.map((c, i) => {
        const [state, symbol, said] = mark(c.slug);
        return `<details class="yt-check your-turn-check-${esc(c.slug)}" id="check-${esc(c.slug)}" data-slug="${esc(c.slug)}">`
          + `<summary><span class="yt-mark yt-mark-${state}" title="${esc(said)}" aria-label="${esc(said)}">${symbol}</span> `
          + `<span class="yt-number-label">${i + 1}.</span> <span class="yt-question">${esc(c.question)}</span> `
          + `<span class="yt-section">${esc(c.section)}</span></summary><div class="yt-form"></div></details>`;
      }).join("");
    }).catch((e) => {
      delete block.dataset.filled;
      body.innerHTML = `<p class="yt-error" role="alert">⚠ ${esc(e.message)}</p>`;
    });
    return block.filledPromise;
  };
  const openCheck = async (box) => {
    box.open = true;
    if (!box.setup && !box.loading) {
      box.loading = loadSetup(box, null).finally(() => { if (!box.setup) box.loading = null; });
    }
    await box.loading;
  };
  const refreshMarks = () => document.querySelectorAll(".yt-check").forEach((box) => {
    const span = box.querySelector(".yt-mark");
    if (!span) return;
    const [state, symbol, said] = mark(box.dataset.slug);
    span.className = `yt-mark yt-mark-${state}`;
    span.textContent = symbol;
    span.title = said;
    span.setAttribute("aria-label", said);
  });

  const mount = (element, tab) => {
    if (element.querySelector(".yt-map")) map(element);
    const block = element.querySelector(".your-turn");
    if (!block || block.dataset.mounted) return;
    block.dataset.mounted = "1";
    blocks[tab] = block;
    block.querySelector(".yt-summary").innerHTML = `<span class="yt-title">${esc(words("title"))}</span> `
      + `<span class="yt-count">${esc(words("count", {n: (cfg.checks[tab] || []).length}))}</span>`;
    block.addEventListener("toggle", () => { if (block.open) fillBlock(block); });
    block.addEventListener("toggle", (event) => {
      const box = event.target.closest?.(".yt-check");
      if (box && box.open && event.target === box) openCheck(box);
    }, true);  // a check's own <details> toggles do not bubble
    block.addEventListener("click", onClick);
    block.addEventListener("input", onInput);
    if (pending && tabOf(pending) === tab) reveal();
  };

  // -- ?check=<slug>, the tour and the map open one check -----------------------------------------------------------
  let pending = null, token = 0;
  const shown = (el) => !!el && el.offsetParent !== null;
  const reveal = async () => {
    const slug = pending, mine = ++token;
    const tab = tabOf(slug);
    const began = performance.now();
    while (mine === token && !shown(blocks[tab]) && performance.now() - began < 60000) {
      await new Promise((r) => setTimeout(r, 150));
    }
    if (mine !== token || !shown(blocks[tab])) return;
    pending = null;
    const block = blocks[tab];
    block.open = true;
    await fillBlock(block);
    const box = block.querySelector(`.yt-check[data-slug="${CSS.escape(slug)}"]`);
    if (!box) return;
    await openCheck(box);
    box.scrollIntoView({block: "start", behavior: "auto"});
    box.querySelector("summary")?.focus({preventScroll: true});
  };
  const open = (slug, navigate = true) => {
    const tab = tabOf(slug);
    if (!tab) return false;
    if (navigate) {
      const href = `?tab=${tab}&check=${encodeURIComponent(slug)}`;
      if (window.plmOpenLink) window.plmOpenLink(href);
      else window.history.replaceState(null, "", href);
    }
    pending = slug;
    reveal();
    return true;
  };

  // -- the Overview's map -----------------------------------------------------------------------------------------------
  const drawMap = (element) => {
    const body = element.querySelector(".yt-map-body");
    if (!body) return;
    const all = progress();
    const chapters = Object.entries(cfg.checks).filter(([, slugs]) => slugs.length);
    body.innerHTML = `<p class="yt-hint">${esc(words("map_intro"))}</p><ol class="yt-map-arc">`
      + chapters.map(([tab, slugs]) => {
        const tried = slugs.filter((s) => all[s]?.tried).length, right = slugs.filter((s) => all[s]?.right).length;
        return `<li class="yt-map-chapter" data-tab="${esc(tab)}"><span class="yt-map-name">${esc(cfg.tabs[tab][lang()])}</span>`
          + `<span class="yt-map-dots">` + slugs.map((s, i) => {
            const [state, symbol, said] = mark(s);
            return `<a class="yt-dot yt-mark-${state}" href="?check=${esc(s)}" `
              + `aria-label="${esc(words("map_open", {n: i + 1}))}: ${esc(said)}" title="${esc(said)}">${symbol}</a>`;
          }).join("") + `</span><span class="yt-map-count">${esc(words("map_tried", {tried, right, n: slugs.length}))}</span></li>`;
      }).join("") + `</ol><div class="yt-actions"><button type="button" class="yt-reset">${esc(words("map_reset"))}</button>`
      + `<span class="yt-map-status" role="status" aria-live="polite"></span></div>`;
  };
  const maps = new Set();
  const map = (element) => {
    if (maps.has(element)) return;
    maps.add(element);
    const title = element.querySelector(".yt-map-title");
    if (title) title.textContent = words("map_title");
    drawMap(element);
    element.addEventListener("click", (event) => {
      if (!event.target.closest(".yt-reset")) return;
      try { localStorage.removeItem(KEY); } catch (e) {}
      window.dispatchEvent(new CustomEvent("plm-checks-changed"));
      element.querySelector(".yt-map-status").textContent = words("map_cleared");
      element.querySelector(".yt-reset")?.focus();
    });
  };
  window.addEventListener("plm-checks-changed", () => {
    maps.forEach((element) => {
      const status = element.querySelector(".yt-map-status")?.textContent || "";
      drawMap(element);
      const again = element.querySelector(".yt-map-status");
      if (again) again.textContent = status;
    });
    refreshMarks();
  });
  window.addEventListener("storage", (event) => { if (event.key === KEY) window.dispatchEvent(new CustomEvent("plm-checks-changed")); });

  // A link to ?check=<slug> anywhere in the page (the map, a lesson) opens the check in place.
  document.addEventListener("click", (event) => {
    const link = event.target.closest?.('a[href^="?check="]');
    if (!link || event.defaultPrevented || event.ctrlKey || event.metaKey || event.shiftKey || event.button) return;
    const slug = new URLSearchParams(link.getAttribute("href")).get("check");
    if (tabOf(slug)) { event.preventDefault(); open(slug); }
  });

  // The address: ?check=<slug> (the loader already made it ?tab=<its tab>&check=<slug>): the block opens the check
  // once it is on screen.
  const asked = new URLSearchParams(window.location.search).get("check");
  if (asked && tabOf(asked)) pending = asked;

  const queued = window.plmYourTurn?.queue || [];
  // control, predictionOf, restore, setupHtml: a class's banner draws the same form (assets/classroom.js)
  window.plmYourTurn = {mount, map, open, progress, call, control, predictionOf, restore, setupHtml};
  queued.forEach(([name, args]) => window.plmYourTurn[name](...args));
})();
