// js_on_load of a view drawn without plotly (demo/kit/static_html.py): PNG (slide width, SLIDE_WIDTH px, white
// background), SVG or CSV of the figure or table whose button was clicked.
element.addEventListener("click", (event) => {
  const button = event.target.closest("button.static-export");
  if (!button) return;
  const holder = button.closest("[data-name]");
  const save = (blob, extension) => {
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = holder.dataset.name + "." + extension;
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  };
  const format = button.dataset.format;
  if (format === "csv") {
    save(new Blob(["\ufeff" + button.dataset.csv], {type: "text/csv;charset=utf-8"}), "csv");
    return;
  }
  const svg = holder.querySelector("svg");
  const box = svg.viewBox.baseVal;
  const copy = svg.cloneNode(true);
  copy.setAttribute("width", box.width);
  copy.setAttribute("height", box.height);
  const source = '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(copy);
  if (format === "svg") {
    save(new Blob([source], {type: "image/svg+xml"}), "svg");
    return;
  }
  const image = new Image();
  image.onload = () => {
    const canvas = document.createElement("canvas");
    canvas.width = SLIDE_WIDTH;
    canvas.height = Math.round(box.height * SLIDE_WIDTH / box.width);
    const context = canvas.getContext("2d");
    context.fillStyle = "white";
    context.fillRect(0, 0, canvas.width, canvas.height);
    context.drawImage(image, 0, 0, canvas.width, canvas.height);
    canvas.toBlob((blob) => save(blob, "png"), "image/png");
  };
  image.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(source);
});
