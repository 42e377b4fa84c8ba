// html_template of a view's preset bar (demo/kit/presets.py View.buttons), rendered by the browser from its props:
// a label, then per preset a button and its 🔗 deep link, or, for a slot, a disabled button and what it waits for;
// each pair stays together when the bar wraps. It never reads `value` (the slug of the last click), so a click does
// not re-render it. Last, the teacher's kit's two buttons ("Add to slides", "Link to this view"), where the view has
// them (props.kit, demo/kit/teacher.py). LINK_ICON: demo/kit/preset_bar.py's icon.
${(() => {
  const lang = LANGUAGE;
  return `<span class="preset-label">${title[lang]}</span>` + items.map(p => `<span class="preset-item">` + (p.link
    ? `<button class="preset-btn" data-slug="${p.slug}">${p.label[lang]}</button>`
      + `<a class="copy-link" href="${p.link}" title="${copy[lang]}" aria-label="${copy[lang]}">LINK_ICON</a>`
    : `<button class="preset-btn" disabled>${p.label[lang]}</button>`
      + `<span class="preset-slot">${slot[lang]} ${p.note[lang]}</span>`) + `</span>`).join("")
    + (kit ? `<span class="kit-item"><button class="kit-btn" data-kit="slide" title="${kit.add_title[lang]}">`
      + `${kit.add[lang]}</button><button class="kit-btn" data-kit="link" title="${kit.link_title[lang]}">`
      + `${kit.link[lang]}</button></span>` : "");
})()}
