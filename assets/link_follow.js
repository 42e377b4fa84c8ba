// js= of the hidden #deep-link-follow button, which window.plmOpenLink clicks (assets/link_router.js): the link's
// query goes into its tab's box (TAB_IDS, in the order of the boxes); every other box gets its own value back,
// unchanged, so no other tab's event runs.
(...values) => {
  const asked = new URLSearchParams(window.plmLink || "").get("tab");
  return TAB_IDS.map((tab, i) => (tab === asked ? window.plmLink : values[i]));
}
