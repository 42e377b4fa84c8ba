// A class (issue #55): the part of assets/classroom.js that runs at once, inline in <head>, before any other script
// reads or rewrites the address. A teacher link is ?class=CODE#teach=SECRET: the secret moves into this tab's
// sessionStorage and off the address bar (a projector shows that bar); a browser never sends a fragment to a server.
(() => {
  if (window.plmClass) return;
  const query = new URLSearchParams(window.location.search);
  const code = (query.get("class") || "").toUpperCase();
  const found = /(?:^#|&)teach=([A-Za-z0-9_-]{16,64})/.exec(window.location.hash);
  window.plmClassStart = {code, secret: found ? found[1] : null};
  if (found) {
    try { if (code) sessionStorage.setItem(`plm-class-teach-${code}`, found[1]); } catch (e) {}
    window.history.replaceState(window.history.state, "", window.location.pathname + window.location.search);
  }
  const queue = [];
  window.plmClass = {mount: (element) => queue.push(element), queue};
})();
