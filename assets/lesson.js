// js_on_load of a lesson's box: a "Show me" button sends its step's number with one "click" event.
element.addEventListener("click", (event) => {
  const button = event.target.closest("button.lesson-btn");
  if (!button) return;
  props.value = button.dataset.step;
  trigger("click");
});
