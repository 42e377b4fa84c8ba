// js= of a result table's "⬇ CSV" button (demo/server/handlers.py csv_download): the rows the table holds, made into
// FILE_NAME in the browser. RFC 4180: a field holding a comma, a quote or a line break is quoted, its quotes doubled.
// UTF-8 with a byte-order mark, so spreadsheet programs read 中文 and ⟨⟩ correctly.
(frame) => {
  const rows = frame && Array.isArray(frame.data) ? frame.data : [];
  if (!rows.length) return [];
  const field = (v) => {
    const s = v === null || v === undefined ? "" : String(v);
    return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  };
  const text = "\ufeff" + [frame.headers || [], ...rows].map((row) => row.map(field).join(",")).join("\r\n") + "\r\n";
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([text], {type: "text/csv;charset=utf-8"}));
  link.download = FILE_NAME;
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  return [];
}
