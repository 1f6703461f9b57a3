// Line comments on a proposal's diff: a click on a line number opens a comment form below that
// line (shift-click: from the line clicked before to this one, same file and side). The form
// is a normal POST with the CSRF token the page rendered into <template id="thread-form">.
(() => {
  const template = document.getElementById("thread-form");
  const filesData = document.getElementById("thread-files");
  if (!(template instanceof HTMLTemplateElement) || !filesData) return;
  const files = JSON.parse(filesData.textContent || "[]");
  let anchor = null; // {section, side, line}
  let open = null; // the form row shown now

  const place = (cell) => {
    const row = cell.parentElement;
    const section = cell.closest("section.difffile");
    if (!row || !section || row.classList.contains("hunk")) return null;
    const column = Array.prototype.indexOf.call(row.children, cell);
    const line = parseInt(cell.textContent.trim(), 10);
    const index = parseInt((section.id || "").replace("diff-", ""), 10) - 1;
    const names = files[index];
    if (column > 1 || !line || !names) return null;
    const side = column === 0 ? "old" : "new";
    const path = side === "old" ? names[0] : names[1];
    return path ? { section, side, line, path, row } : null;
  };

  document.addEventListener("click", (event) => {
    const cell = event.target instanceof Element ? event.target.closest(".proposal-diff table.diff td.ln") : null;
    if (!cell) return;
    const here = place(cell);
    if (!here) return;
    let start = here.line;
    let end = here.line;
    let lastRow = here.row;
    if (event.shiftKey && anchor && anchor.section === here.section && anchor.side === here.side) {
      start = Math.min(anchor.line, here.line);
      end = Math.max(anchor.line, here.line);
      if (anchor.line > here.line) lastRow = anchor.row;
      event.preventDefault();
    } else {
      anchor = here;
    }
    if (open) open.remove();
    const fragment = template.content.cloneNode(true);
    const form = fragment.querySelector("form");
    form.elements.path.value = here.path;
    form.elements.side.value = here.side;
    form.elements.line_start.value = String(start);
    form.elements.line_end.value = String(end);
    form.querySelector(".thread-new-where").textContent =
      `${here.path}, ${start === end ? `line ${start}` : `lines ${start}-${end}`} (${here.side} side)`;
    const row = document.createElement("tr");
    row.className = "annotation thread-new-row";
    const td = document.createElement("td");
    td.colSpan = 3;
    td.appendChild(fragment);
    row.appendChild(td);
    let after = lastRow;
    while (after.nextElementSibling && after.nextElementSibling.classList.contains("annotation")) {
      after = after.nextElementSibling;
    }
    after.after(row);
    open = row;
    form.querySelector(".thread-cancel").addEventListener("click", () => { row.remove(); open = null; });
    form.elements.body.focus();
  });
})();
