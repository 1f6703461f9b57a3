// The web editor, progressively enhanced: everything works without this file.
// In the editor's textarea, Tab inserts a tab (Escape first, then Tab, leaves the field), and a
// status line counts lines and characters.
(() => {
  const editor = document.querySelector("textarea.editor");
  const status = document.querySelector("[data-editor-status]");
  if (!(editor instanceof HTMLTextAreaElement)) return;
  let escaped = false;
  editor.addEventListener("keydown", (event) => {
    if (event.key === "Escape") { escaped = true; return; }
    if (event.key !== "Tab" || event.shiftKey || event.ctrlKey || event.altKey || event.metaKey || escaped) {
      escaped = false;
      return;
    }
    event.preventDefault();
    editor.setRangeText("\t", editor.selectionStart, editor.selectionEnd, "end");
    editor.dispatchEvent(new Event("input"));
  });
  const update = () => {
    if (!status) return;
    const text = editor.value;
    const lines = text === "" ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
    status.textContent = `${lines} line${lines === 1 ? "" : "s"}, ${text.length} characters`;
  };
  editor.addEventListener("input", update);
  update();
})();
