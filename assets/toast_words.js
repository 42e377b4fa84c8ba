// A <head> script (demo/kit/i18n.py toast_head puts window.plmToastWords = {en: {…}, zh: {…}} before it). Gradio's
// toasts name their kind in English whatever the page's language: "Error", "Warning", "Info" or "Success" is the
// message's type, capitalised, not a key of its translations (gradio 6.31, its statustracker); their close button
// is labelled "Close". On a page in another language each toast's kind and close label are put in the page's words
// as the toast appears, in its text, so a screen reader reads them too. An English page runs nothing.
(() => {
  const all = window.plmToastWords;
  const lang = /^zh/i.test(navigator.language || "") ? "zh" : "en";
  if (!all || lang === "en" || window.plmToasts) return;
  window.plmToasts = true;
  const words = all[lang], KINDS = ["error", "warning", "info", "success"];
  const translate = (wrap) => {
    for (const title of wrap.querySelectorAll(".toast-title")) {
      const kind = KINDS.find((k) => title.classList.contains(k)), node = title.firstChild;
      if (kind && node?.nodeType === Node.TEXT_NODE && node.data.trim() !== words[kind]) node.data = `${words[kind]} `;
    }
    for (const button of wrap.querySelectorAll(".toast-close")) {
      if (button.getAttribute("aria-label") !== words.close) button.setAttribute("aria-label", words.close);
    }
  };
  // Gradio draws its toasts' box (.toast-wrap) with the app, after this script: watch for it, then watch it.
  const found = () => {
    const wrap = document.querySelector(".toast-wrap");
    if (!wrap) return false;
    new MutationObserver(() => translate(wrap)).observe(wrap, {childList: true, subtree: true, characterData: true});
    translate(wrap);
    return true;
  };
  if (found()) return;
  const waiting = new MutationObserver(() => { if (found()) waiting.disconnect(); });
  waiting.observe(document.documentElement, {childList: true, subtree: true});
})();
