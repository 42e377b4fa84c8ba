// A script inside the first page's text (demo/ladder/overview.py first_page, put into the page by
// demo/server/first_page.py PageWords): that text is the page's own HTML, readable before Gradio's front end has
// loaded. It goes the moment the app has drawn its tab bar: a MutationObserver runs before the next paint, so the
// Overview is never on screen twice.
(() => {
  const text = document.getElementById("plm-first-page");
  if (!text) return;
  const drawn = () => !!document.querySelector("gradio-app [role=tablist]");
  const observer = new MutationObserver(() => {
    if (!drawn()) return;
    text.remove();
    observer.disconnect();
  });
  observer.observe(document.body, {childList: true, subtree: true});
})();
