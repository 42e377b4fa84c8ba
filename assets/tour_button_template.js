// html_template of the header's "Start the tour" button (demo/kit/tour.py), rendered by the browser in its language;
// assets/tour.js keeps its words up to date.
${(() => {
  const lang = LANGUAGE;
  return `<button type="button" class="tour-start" data-tour-start="1">${ui.start[lang]}</button>`;
})()}
