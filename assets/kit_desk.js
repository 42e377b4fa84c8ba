// js_on_load of a tab's hidden kit desk (demo/kit/teacher.py _wire_tab): the one place a preset bar's "Add to
// slides" or "Link to this view" asks the server for a slide's words. The bar calls window.plmKitDesks[tab](view,
// mode); the desk sends "<mode>:<view key>:<n>" with the inputs of the tab's views (one "submit" event per tab), and
// the answer comes back as its value (JSON), which assets/kit.js turns into a slide or a copied link. TAB_ID: the
// tab's id.
window.plmKitDesks = window.plmKitDesks || {};
let asked = 0;
window.plmKitDesks[TAB_ID] = (view, mode) => {
  props.value = `${mode}:${view}:${++asked}`;
  trigger("submit");
};
watch("value", () => { if (String(props.value).startsWith("{")) window.plmKit?.take(props.value); });
