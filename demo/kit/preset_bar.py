"""The preset bar's browser side (demo/presets.View.buttons): ONE gr.HTML per view, rendered by the browser from
its props, with one "click" event whose value is the preset's slug."""
from __future__ import annotations

from demo.kit.i18n import BROWSER_LANGUAGE_JS

# A chain-link icon drawn in the text colour: an emoji (🔗) needs a colour-emoji font, which a screenshot machine
# may lack (Debian's headless Chromium drew an empty box).
LINK_ICON = ('<svg width="15" height="15" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2.2" '
             'stroke-linecap="round" stroke-linejoin="round" aria-hidden="true">'
             '<path d="M10 13a5 5 0 0 0 7.54.54l3-3a5 5 0 0 0-7.07-7.07l-1.72 1.71"/>'
             '<path d="M14 11a5 5 0 0 0-7.54-.54l-3 3a5 5 0 0 0 7.07 7.07l1.71-1.71"/></svg>')
# The preset bar, rendered by the browser from its props (a JS template string): a label, then per preset a button
# and its 🔗 deep link, or, for a slot, a disabled button and what it waits for; each pair stays together when the
# bar wraps. It never reads ``value`` (the slug of the last click), so a click does not re-render it.
BAR_TEMPLATE = """${(() => {
  const lang = LANGUAGE;
  return `<span class="preset-label">${title[lang]}</span>` + items.map(p => `<span class="preset-item">` + (p.link
    ? `<button class="preset-btn" data-slug="${p.slug}">${p.label[lang]}</button>`
      + `<a class="copy-link" href="${p.link}" title="${copy[lang]}" aria-label="${copy[lang]}">LINK_ICON</a>`
    : `<button class="preset-btn" disabled>${p.label[lang]}</button>`
      + `<span class="preset-slot">${slot[lang]} ${p.note[lang]}</span>`) + `</span>`).join("");
})()}""".replace("LANGUAGE", BROWSER_LANGUAGE_JS).replace("LINK_ICON", LINK_ICON)
# A preset button sends its slug as the bar's value with one "click" event. A 🔗 click puts the preset's link in the
# address bar and the clipboard, and loads nothing (a modified click still opens it in a new tab, as links do).
BAR_JS = """element.addEventListener("click", (event) => {
  const link = event.target.closest("a.copy-link");
  if (link) {
    if (event.ctrlKey || event.metaKey || event.shiftKey || event.button) return;
    event.preventDefault();
    const url = new URL(link.getAttribute("href"), window.location.href);
    url.hash = "";
    if (navigator.clipboard) navigator.clipboard.writeText(url.href).catch(() => {});
    window.history.replaceState(null, "", url.href);
    return;
  }
  const button = event.target.closest("button.preset-btn");
  if (!button || button.disabled) return;
  props.value = button.dataset.slug;
  trigger("click");
});"""
