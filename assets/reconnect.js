// A <head> script (demo/kit/reconnect.py puts window.plmReconnectConfig = {words: {en, zh}} before it).
// When the server behind this page went away (a replica killed or restarted behind nginx, docs/DEPLOY.md; a restart
// of a single server), the page's Gradio session went with it. On the learner's next press (at most one check every
// 10 s: a press sooner is answered when the 10 s are up),
// and when the tab comes back into view, the page asks the server's app_id (Gradio's own /app_id route, a random
// number per app process) and compares it with the one it was built by:
// - no answer: a banner says the connection is lost and that it is reconnecting, and it asks again every 2 s;
// - another app_id: the banner says so and the page reloads itself (its address keeps the tab, preset and link);
// - the same app_id: the banner goes away (a blip).
(() => {
  const cfg = window.plmReconnectConfig;
  if (!cfg || window.plmReconnect) return;
  const CHECK_EVERY_MS = 10000, RETRY_MS = 2000, RELOAD_AFTER_MS = 3000;
  const lang = () => (/^zh/i.test(navigator.language || (navigator.languages || [])[0] || "") ? "zh" : "en");
  const words = (key) => cfg.words[lang()][key];
  let last = 0, banner = null, retry = null;
  const show = (key, busy) => {
    if (!banner) {
      banner = document.createElement("div");
      banner.className = "plm-reconnect";
      banner.setAttribute("role", "alert");
      document.body.appendChild(banner);
    }
    banner.dataset.state = key;
    banner.textContent = (busy ? "⟳ " : "") + words(key);
  };
  const hide = () => { if (banner) { banner.remove(); banner = null; } };
  const url = () => {
    const config = window.gradio_config || {};
    const root = String(config.root || (location.origin + location.pathname)).replace(/\/+$/, "");
    return `${root}${config.api_prefix || "/gradio_api"}/app_id`;
  };
  const check = async () => {
    const mine = window.gradio_config?.app_id;
    if (mine == null) return;
    last = Date.now();
    let now = null;
    try {
      const response = await fetch(url(), {cache: "no-store", credentials: "same-origin"});
      if (response.ok) now = (await response.json()).app_id;
    } catch (e) {}
    if (!now) {  // nobody answers (yet): say so, and ask again
      show("lost", true);
      clearTimeout(retry);
      retry = setTimeout(check, RETRY_MS);
      return;
    }
    // app_id is a 64-bit number and gradio_config holds it as a float: compared as floats, the rounding is the same
    if (Number(now) === Number(mine)) { hide(); return; }
    show("moved", true);
    setTimeout(() => location.reload(), RELOAD_AFTER_MS);
  };
  // a press within 10 s of the last check is not dropped: the check comes when the 10 s are up
  let waiting = null;
  const soon = () => {
    if (banner || waiting) return;
    const wait = CHECK_EVERY_MS - (Date.now() - last);
    if (wait <= 0) { check(); return; }
    waiting = setTimeout(() => { waiting = null; if (!banner) check(); }, wait);
  };
  document.addEventListener("pointerdown", soon, true);
  document.addEventListener("keydown", soon, true);
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") soon(); });
  window.addEventListener("online", check);
  window.plmReconnect = {check};
})();
