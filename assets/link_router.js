// js= of the page's load (demo/kit/presets.py Registry.wire): install the in-page link router once, then hand the
// address's query to its tab's deep-link box (one box per tab, TAB_IDS, in the order of the load's outputs). A click
// on a link to `?tab=…` (not a 🔗 copy link, whose own handler already took it, nor a modified click, which opens a
// new tab) puts the link in the address bar and opens it in place: no page load, so no 3-4 s of Gradio and plotly.js
// starting again. Each link gets a counter (`&open=n`, ignored by the server), so the same link clicked twice still
// changes the box. LIMIT: the characters of a query read (presets.QUERY_LIMIT).
() => {
  const tabs = TAB_IDS;
  const tabOf = (search) => new URLSearchParams(search).get("tab");
  if (!window.plmOpenLink) {
    let count = 0;
    window.plmOpenLink = (href) => {
      window.history.pushState(null, "", href);
      window.plmLink = (window.location.search + "&open=" + (++count)).slice(0, LIMIT);
      document.querySelector("#deep-link-follow")?.click();
    };
    document.addEventListener("click", (event) => {
      const link = event.target.closest?.('a[href^="?tab="]');
      if (!link || event.defaultPrevented || event.ctrlKey || event.metaKey || event.shiftKey || event.button) return;
      event.preventDefault();
      window.plmOpenLink(link.getAttribute("href"));
    });
  }
  const search = window.location.search.slice(0, LIMIT), asked = tabOf(search);
  return tabs.map((tab) => (tab === asked ? search : ""));
}
