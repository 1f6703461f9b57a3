// Line and range permalinks on the file view (templates/repos/blob.html). A line number selects
// its line (#L12), Shift and a number the range from the last selected line (#L10-L20); the
// selection is marked on load and on hash change and scrolled into view, and the Permalink
// link (the file at its commit id) carries it. Without JavaScript the numbers are plain
// anchors and CSS's :target marks the one line.
(() => {
  const table = document.getElementById("blob-lines");
  if (!table) {
    return;
  }
  const permalink = document.getElementById("permalink");
  const copy = document.getElementById("copy-permalink");
  const status = document.getElementById("permalink-status");
  const base = table.dataset.permalink;
  const last = table.rows.length;
  let marked = [];
  let anchor = null; // the line a Shift-selection extends from

  function parse(hash) {
    const match = /^#L(\d+)(?:-L(\d+))?$/.exec(hash);
    if (!match) {
      return null;
    }
    const a = Number(match[1]);
    const b = match[2] ? Number(match[2]) : a;
    const first = Math.min(a, b);
    return first >= 1 && first <= last ? [first, Math.min(Math.max(a, b), last)] : null;
  }

  function hashOf(range) {
    return range[0] === range[1] ? `#L${range[0]}` : `#L${range[0]}-L${range[1]}`;
  }

  function mark(range, scroll) {
    for (const row of marked) {
      row.classList.remove("selected");
    }
    marked = [];
    if (range) {
      for (let n = range[0]; n <= range[1]; n++) {
        const row = document.getElementById(`L${n}`);
        row.classList.add("selected");
        marked.push(row);
      }
      if (scroll) {
        marked[0].scrollIntoView({ block: "center" });
      }
    }
    if (permalink) {
      permalink.href = base + (range ? hashOf(range) : "");
    }
  }

  function fromLocation() {
    const range = parse(window.location.hash);
    anchor = range ? range[0] : null;
    mark(range, true);
  }

  // From here on the script marks selections: :target would keep marking the line the page
  // was opened at, since replaceState does not move it.
  table.classList.add("js");
  table.addEventListener("mousedown", (event) => {
    if (event.shiftKey && event.target.closest("td.num a")) {
      event.preventDefault(); // Shift-click extends the selection of lines, not of text
    }
  });
  table.addEventListener("click", (event) => {
    const link = event.target.closest("td.num a");
    if (!link || event.ctrlKey || event.metaKey || event.altKey) {
      return; // a new tab or window, as for any link
    }
    event.preventDefault();
    const n = Number(link.textContent);
    const range = event.shiftKey && anchor ? [Math.min(anchor, n), Math.max(anchor, n)] : [n, n];
    if (!event.shiftKey || !anchor) {
      anchor = n;
    }
    window.history.replaceState(null, "", hashOf(range));
    mark(range, false);
  });
  window.addEventListener("hashchange", fromLocation);
  fromLocation();

  if (copy && permalink && navigator.clipboard) {
    copy.hidden = false;
    copy.addEventListener("click", async () => {
      const url = new URL(permalink.getAttribute("href"), window.location.href).href;
      try {
        await navigator.clipboard.writeText(url);
        status.textContent = "Copied.";
      } catch {
        status.textContent = "Could not copy: the Permalink link holds the address.";
      }
    });
  }
})();
