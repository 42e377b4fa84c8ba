// js_on_load of a view's preset bar: a preset button sends its slug as the bar's value with one "click" event. A 🔗
// click puts the preset's link in the address bar and the clipboard, and loads nothing (a modified click still opens
// it in a new tab, as links do). The teacher's kit's "Add to slides" and "Link to this view" ask the tab's kit desk
// (assets/kit_desk.js), which sends the view's inputs.
element.addEventListener("click", (event) => {
  const kit = event.target.closest("button.kit-btn");
  if (kit) {
    window.plmKitDesks?.[props.kit.tab]?.(props.kit.view, kit.dataset.kit);
    return;
  }
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
});
