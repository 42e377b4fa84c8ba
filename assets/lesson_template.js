// html_template of a lesson's "Try this" box (demo/kit/lessons.py), rendered by the browser from its props. It never
// reads `value` (the number of the last step asked for), so a click re-renders nothing and open answers stay open.
${(() => {
  const lang = LANGUAGE;
  return `<details class="lesson"><summary>${title[lang]}</summary>` + steps.map(s =>
    `<div class="lesson-step"><p><b>${s.number}.</b> (${s.section}) ${s.question[lang]}</p>`
    + `<button class="lesson-btn" data-step="${s.number}">${show[lang]}</button></div>`
    + `<details class="lesson-answer"><summary>${answer[lang]}</summary><p>${s.answer[lang]}</p></details>`
  ).join("") + `</details>`;
})()}
