// A class predicts together (issue #55): the browser side of demo/kit/classroom.py, fetched once from its own address
// (and cached), after <head> set window.plmClassConfig = {words: {en, zh}} and ran assets/classroom_loader.js, which
// took a teacher's secret off the address (window.plmClassStart) and queued the area's mount until now.
//
// Three states of the "Class" area above the tabs:
// - nobody's class: a "Start a class" button;
// - a student (?class=CODE): join (nickname optional), then the banner shows the check the teacher asked, with the
//   same form as "Your turn" (assets/your_turn.js), and the prediction is sent to /class/api/answer;
// - the teacher (the secret in this tab's sessionStorage): the codes and links, the check picker, and the view the
//   class sees on the projector, polled every second: how many answered, the spread, then the model's answer.
// Every call is POST /class/api/<action> with a JSON body: the secret never goes into a URL.
(() => {
  if (window.plmClass && !window.plmClass.queue) return;
  const cfg = window.plmClassConfig;
  const TEACHER_POLL_MS = 1000, STUDENT_POLL_MS = 3000;
  const lang = () => (/^zh/i.test(navigator.language || (navigator.languages || [])[0] || "") ? "zh" : "en");
  const fill = (template, fields) => String(template).replace(/\{(\w+)\}/g, (_, k) => (k in fields ? fields[k] : `{${k}}`));
  const words = (key, fields = {}) => fill(cfg.words[lang()][key], fields);
  const esc = (v) => String(v ?? "").replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");
  const store = {
    get: (key) => { try { return sessionStorage.getItem(key); } catch (e) { return null; } },
    set: (key, value) => { try { sessionStorage.setItem(key, value); } catch (e) {} },
    drop: (key) => { try { sessionStorage.removeItem(key); } catch (e) {} },
  };
  const randomId = () => {
    const bytes = crypto.getRandomValues(new Uint8Array(18));
    return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  };

  // -- the server ----------------------------------------------------------------------------------------------------
  const base = () => String(window.gradio_config?.root || (location.origin + location.pathname)).replace(/\/+$/, "");
  const post = async (action, body) => {
    const response = await fetch(`${base()}/class/api/${action}`, {
      method: "POST", headers: {"Content-Type": "application/json"}, credentials: "same-origin",
      referrerPolicy: "no-referrer", body: JSON.stringify({...body, lang: lang()})});
    let data = null;
    try { data = await response.json(); } catch (e) {}
    if (!response.ok) {
      const error = new Error(data?.error || words("failed"));
      error.status = response.status;
      throw error;
    }
    return data;
  };

  // -- who this tab is -------------------------------------------------------------------------------------------------
  const start = window.plmClassStart || {};
  let code = start.code || "";
  let secret = code ? (start.secret || store.get(`plm-class-teach-${code}`)) : null;
  const session = store.get("plm-class-session") || randomId();
  store.set("plm-class-session", session);
  let area = null, timer = null;
  const studentKey = () => `plm-class-student-${code}`;
  const link = (withSecret) => `${location.origin}${location.pathname}?class=${code}`
    + (withSecret ? `#teach=${secret}` : "");
  // ?class=CODE in the address (other parameters as they are), so a reload stays in the class
  const remember = () => {
    const url = new URL(location.href);
    url.searchParams.set("class", code);
    window.history.replaceState(window.history.state, "", url.pathname + url.search);
  };
  const body = () => area.querySelector(".class-body");
  const status = (message, error = false) => {
    const out = area.querySelector(".class-status");
    if (out) { out.textContent = message; out.classList.toggle("class-error", error); }
  };
  // A poll's answer can arrive after the class ended (closed here, or gone): each ending starts a new era, and an answer
  // asked for in an earlier era is dropped, so it cannot redraw a view that is no longer there or replace the message.
  let era = 0;
  const stop = () => { if (timer) clearTimeout(timer); timer = null; };
  const every = (ms, fn) => {
    stop();
    const tick = async () => { try { await fn(); } finally { if (timer !== null) timer = setTimeout(tick, ms); } };
    timer = 0;
    tick();
  };
  const ended = (message) => {
    stop();
    era += 1;
    store.drop(studentKey());
    if (secret) store.drop(`plm-class-teach-${code}`);
    secret = null;
    code = "";
    const url = new URL(location.href);
    url.searchParams.delete("class");
    window.history.replaceState(window.history.state, "", url.pathname + url.search);
    drawIdle();
    status(message);
  };

  // -- nobody's class yet: start one -----------------------------------------------------------------------------
  const drawIdle = () => {
    body().innerHTML = `<div class="yt-actions"><button type="button" class="class-start lg">${esc(words("start"))}</button></div>`
      + `<p class="class-status" role="status" aria-live="polite"></p>`;
  };
  const startClass = async (button) => {
    button.disabled = true;
    button.textContent = words("starting");
    try {
      const made = await post("start", {});
      code = made.code;
      secret = made.secret;
      store.set(`plm-class-teach-${code}`, secret);
      remember();
      drawTeacher();
    } catch (e) {
      button.disabled = false;
      button.textContent = words("start");
      status(e.message, true);
    }
  };

  // -- the teacher ---------------------------------------------------------------------------------------------------
  let lastHtml = null, checks = [];
  const drawTeacher = async () => {
    area.open = true;
    area.classList.add("class-teaching");
    body().innerHTML = `<div class="class-teacher">`
      + `<h2 class="class-heading">${esc(words("teacher_view", {code}))}</h2>`
      + `<p class="class-volatile" hidden>⚠ ${esc(words("volatile"))}</p>`
      + `<p class="class-join-line"><span>${esc(words("code"))}:</span> <strong class="class-code">${esc(code)}</strong> `
      + `<span>${esc(words("student_link"))}:</span> <a class="class-student-link" href="${esc(link(false))}">${esc(link(false))}</a></p>`
      + `<details class="class-secret"><summary>${esc(words("teacher_link"))}</summary>`
      + `<p class="yt-hint">${esc(words("teacher_keep"))}</p>`
      + `<input type="text" readonly class="class-teacher-link" aria-label="${esc(words("teacher_link"))}" value="${esc(link(true))}">`
      + `<button type="button" class="class-copy">${esc(words("copy"))}</button></details>`
      + `<div class="class-controls"><label>${esc(words("pick"))} <select class="class-pick"></select></label>`
      + `<button type="button" class="class-ask primary">${esc(words("ask"))}</button>`
      + `<button type="button" class="class-reveal">${esc(words("reveal"))}</button>`
      + `<button type="button" class="class-fullscreen">${esc(words("fullscreen"))}</button>`
      + `<button type="button" class="class-close stop">${esc(words("close"))}</button></div>`
      + `<p class="class-question"></p><p class="class-count" aria-live="polite"></p>`
      + `<div class="class-view static-view"></div><p class="class-status" role="status" aria-live="polite"></p></div>`;
    lastHtml = null;
    fillPicker();
    every(TEACHER_POLL_MS, refresh);
  };
  const fillPicker = async () => {
    try {
      checks = await window.plmYourTurn.call("checks_list", [lang()]);
    } catch (e) { status(e.message, true); return; }
    const select = area.querySelector(".class-pick");
    if (!select) return;
    const tabs = window.plmYourTurnConfig?.tabs || {};
    const groups = [...new Set(checks.map((c) => c.tab))];
    select.innerHTML = groups.map((tab) => `<optgroup label="${esc(tabs[tab]?.[lang()] || tab)}">`
      + checks.filter((c) => c.tab === tab).map((c) => `<option value="${esc(c.slug)}">${esc(c.question)} ${esc(c.section)}</option>`).join("")
      + "</optgroup>").join("");
    if (shown.slug) select.value = shown.slug;
  };
  const shown = {slug: null};
  const showTeacher = (view) => {
    shown.slug = view.slug;
    area.querySelector(".class-volatile").hidden = !!view.durable;
    const question = checks.find((c) => c.slug === view.slug)?.question;
    area.querySelector(".class-question").textContent = view.slug ? words("asked", {question: question || view.slug}) : words("no_check");
    area.querySelector(".class-count").textContent = words("answered", {answered: view.answered, joined: view.joined});
    area.querySelector(".class-count").dataset.answered = String(view.answered);
    area.querySelector(".class-reveal").disabled = !view.slug || view.revealed;
    const out = area.querySelector(".class-view");
    out.dataset.revealed = view.revealed ? "1" : "";
    if (view.html !== lastHtml) { out.innerHTML = view.html; lastHtml = view.html; }
    out.dataset.fresh = String(Date.now());
  };
  const teach = async (action, extra = {}) => {
    const asked = era;
    const view = await post(action, {code, secret, ...extra});
    if (asked === era) showTeacher(view);
    return view;
  };
  const refresh = async () => {
    const asked = era;
    try {
      await teach("teacher");
    } catch (e) {
      if (asked !== era) return;
      if (e.status === 404) ended(words("gone"));
      else status(e.message, true);
    }
  };
  const onTeacherClick = async (button) => {
    status("");
    try {
      if (button.classList.contains("class-ask")) await teach("ask", {slug: area.querySelector(".class-pick").value});
      else if (button.classList.contains("class-reveal")) {
        button.disabled = true;
        await teach("reveal");
      } else if (button.classList.contains("class-close")) {
        if (!window.confirm(words("confirm_close"))) return;
        stop();
        try {
          await post("close", {code, secret});
        } catch (e) {
          every(TEACHER_POLL_MS, refresh);  // still open: keep the view live
          throw e;
        }
        ended(words("closed"));
      } else if (button.classList.contains("class-copy")) {
        await navigator.clipboard?.writeText(link(true));
        status(words("copied"));
      } else if (button.classList.contains("class-fullscreen")) {
        area.requestFullscreen?.();
      }
    } catch (e) {
      status(e.message, true);
      if (button.classList.contains("class-reveal")) button.disabled = false;
    }
  };
  // "Ask my class this" in every opened "Your turn" check, while this tab teaches a class
  document.addEventListener("toggle", (event) => {
    const box = event.target;
    if (!secret || !box.classList?.contains("yt-check") || !box.open || box.querySelector(".class-ask-this")) return;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "class-ask-this";
    button.textContent = words("ask_this");
    button.addEventListener("click", async () => {
      try {
        await teach("ask", {slug: box.dataset.slug});
        const select = area.querySelector(".class-pick");
        if (select) select.value = box.dataset.slug;
        area.scrollIntoView({block: "start"});
      } catch (e) { status(e.message, true); }
    });
    box.querySelector("summary").after(button);
  }, true);

  // -- a student -----------------------------------------------------------------------------------------------------
  let student = null, known = null;
  const drawJoin = () => {
    area.open = true;
    body().innerHTML = `<div class="class-banner"><p class="class-heading">${esc(words("student_banner", {code}))}</p>`
      + `<p class="yt-hint">${esc(words("nickname_hint"))}</p>`
      + `<label>${esc(words("nickname"))} <input type="text" class="class-nickname" maxlength="40" autocomplete="off"></label>`
      + `<div class="yt-actions"><button type="button" class="class-join primary">${esc(words("join", {code}))}</button></div>`
      + `<p class="class-status" role="status" aria-live="polite"></p></div>`;
  };
  const join = async (button) => {
    button.disabled = true;
    try {
      const joined = await post("join", {code, session, nickname: area.querySelector(".class-nickname").value});
      student = joined.student;
      store.set(studentKey(), student);
      remember();
      drawBanner();
      showStudent(joined);
      every(STUDENT_POLL_MS, poll);
    } catch (e) {
      button.disabled = false;
      if (e.status === 404) ended(e.message);
      else status(e.message, true);
    }
  };
  const drawBanner = () => {
    area.open = true;
    known = null;
    body().innerHTML = `<div class="class-banner"><p class="class-heading">${esc(words("student_banner", {code}))}</p>`
      + `<div class="class-check"></div><p class="class-status" role="status" aria-live="polite"></p></div>`;
  };
  const valueText = (setup, value) => {
    if (value == null) return "";
    if (setup.kind === "token") return setup.shown[Number(value)] ?? value;
    if (setup.kind === "order") return value.map((v) => setup.shown[setup.options.indexOf(v)] ?? v).join(" → ");
    if (setup.kind === "choice") return setup.shown[setup.options.indexOf(value)] ?? value;
    return String(value);
  };
  const showStudent = (state) => {
    const box = area.querySelector(".class-check");
    const changed = !known || known.asked !== state.asked || known.revealed !== state.revealed;
    known = state;
    if (!changed) return;
    if (!state.check) {
      box.innerHTML = `<p class="class-waiting">${esc(words("waiting"))}</p>`;
      return;
    }
    const setup = state.check;
    box.dataset.slug = setup.slug;
    const yt = window.plmYourTurn;
    box.innerHTML = `<p class="class-question">${esc(setup.question)} <span class="yt-section">${esc(setup.section)}</span></p>`
      + `<div class="yt-form">${yt.setupHtml(setup)}`
      + `<fieldset class="yt-answer"${state.revealed ? " disabled" : ""}><legend>${esc(words("your_answer"))}</legend>`
      + yt.control(setup, `class-${setup.slug}-${state.asked}`) + "</fieldset>"
      + (state.revealed ? "" : `<div class="yt-actions"><button type="button" class="class-send primary">${esc(words("send"))}</button></div>`)
      + `<p class="class-mine" aria-live="polite"></p></div>`;
    yt.restore(box, setup, state.mine);
    const mine = box.querySelector(".class-mine");
    if (state.mine != null) mine.textContent = words("sent", {value: valueText(setup, state.mine)});
    if (state.revealed && state.answer_text != null) {
      mine.textContent = words("revealed_student", {answer: state.answer_text})
        + (state.mine != null ? " " + words(state.right ? "right" : "wrong") : "");
    }
  };
  const poll = async () => {
    const asked = era;
    try {
      const state = await post("state", {code, student});
      if (asked === era) showStudent(state);
    } catch (e) {
      if (asked !== era) return;
      if (e.status === 404) ended(words("gone"));
      else if (e.status === 403) { store.drop(studentKey()); stop(); drawJoin(); }
      else status(e.message, true);
    }
  };
  const send = async (button) => {
    const setup = known.check;
    const box = area.querySelector(".class-check");
    button.disabled = true;
    status("");
    try {
      const recorded = await post("answer", {code, student, slug: setup.slug,
                                             prediction: window.plmYourTurn.predictionOf(box, setup)});
      known.mine = recorded.mine;
      box.querySelector(".class-mine").textContent = words("sent", {value: valueText(setup, recorded.mine)});
      button.textContent = words("change");
    } catch (e) {
      status(e.message, true);
    } finally {
      button.disabled = false;
    }
  };

  // -- the area ------------------------------------------------------------------------------------------------------
  const onClick = (event) => {
    const button = event.target.closest("button");
    if (!button || button.disabled) return;
    if (button.classList.contains("class-start")) startClass(button);
    else if (button.classList.contains("class-join")) join(button);
    else if (button.classList.contains("class-send")) send(button);
    else if (button.closest(".class-teacher")) onTeacherClick(button);
  };
  const onInput = (event) => {  // the number box and its slider move together (as in "Your turn")
    const number = event.target.closest(".class-check .yt-number");
    if (!number) return;
    const [range, box] = number.querySelectorAll("input");
    if (event.target === range) box.value = range.value;
    else if (box.value !== "" && isFinite(Number(box.value))) range.value = box.value;
  };
  const ready = () => new Promise((resolve) => {
    const wait = () => (window.plmYourTurn?.control ? resolve() : setTimeout(wait, 50));
    wait();
  });
  const mount = async (element) => {
    area = element.querySelector(".class-area");
    if (!area || area.dataset.mounted) return;
    area.dataset.mounted = "1";
    area.querySelector(".class-summary").textContent = words("title") + (code ? ` · ${code}` : "");
    area.addEventListener("click", onClick);
    area.addEventListener("input", onInput);
    await ready();  // the form's pieces come from assets/your_turn.js
    if (code && secret) drawTeacher();
    else if (code && store.get(studentKey())) {
      student = store.get(studentKey());
      drawBanner();
      every(STUDENT_POLL_MS, poll);
    } else if (code) drawJoin();
    else drawIdle();
  };

  const queued = window.plmClass?.queue || [];
  window.plmClass = {mount};
  queued.forEach((element) => mount(element));
})();
