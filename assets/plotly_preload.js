// Appended to the Overview's js_on_load (demo/kit/figures.py PLOTLY_PRELOAD_JS): once the page is idle, import
// plotly.js by the address Gradio's own import uses (CHUNK, beside Gradio's main script), so the browser evaluates it
// once and the learner's first plotted view does not pay it.
(window.requestIdleCallback || window.setTimeout)(() => {
  const main = [...document.scripts].find((s) => /\/assets\/index-[^/]*\.js$/.test(s.src));
  if (main) import(new URL(CHUNK, main.src).href).catch(() => {});
});
