// The branch and tag switcher (templates/repos/_switcher.html). Without JavaScript the panel
// still opens and its filter box goes to the branches page; with it, the lists load from
// refs.json when the panel first opens and narrow as you type.
(() => {
  "use strict";

  const DELAY_MS = 150;

  function entryUrl(box, ref) {
    const path = box.dataset.path;
    return `${box.dataset.base}/${box.dataset.kind}/${ref}${path ? `/${path}` : ""}`;
  }

  function fill(box, list, data) {
    list.replaceChildren();
    for (const ref of data.refs) {
      const item = document.createElement("li");
      const link = document.createElement("a");
      link.href = entryUrl(box, ref.ref);
      link.textContent = ref.name; // names come from the repository: text, never markup
      if (ref.name === box.dataset.current) {
        link.setAttribute("aria-current", "true");
      }
      item.append(link);
      list.append(item);
    }
    if (!data.refs.length) {
      const item = document.createElement("li");
      item.className = "muted";
      item.textContent = "Nothing matches.";
      list.append(item);
    } else if (data.total > data.refs.length) {
      const item = document.createElement("li");
      const link = document.createElement("a");
      link.href = data.more_url;
      link.textContent = `All ${data.total} matching\u2026`;
      item.className = "ref-switch-more";
      item.append(link);
      list.append(item);
    }
  }

  async function load(box, query) {
    const lists = box.querySelectorAll(".ref-switch-list");
    box.dataset.query = query;
    await Promise.all(
      Array.from(lists, async (list) => {
        const url = `${box.dataset.refs}?${new URLSearchParams({ kind: list.dataset.kind, q: query })}`;
        try {
          const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
          if (!response.ok) throw new Error(String(response.status));
          const data = await response.json();
          if (box.dataset.query === query) fill(box, list, data); // a newer query may have started
        } catch {
          list.replaceChildren();
          const item = document.createElement("li");
          item.className = "muted";
          item.textContent = "Could not load the list.";
          list.append(item);
        }
      }),
    );
    box.dataset.loaded = "1";
  }

  function links(box) {
    return Array.from(box.querySelectorAll(".ref-switch-panel a"));
  }

  function setUp(box) {
    const input = box.querySelector("input[name=q]");
    const form = box.querySelector("form");
    let timer = 0;
    box.addEventListener("toggle", () => {
      if (!box.open) return;
      if (!box.dataset.loaded) load(box, input.value.trim());
      input.focus();
    });
    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => load(box, input.value.trim()), DELAY_MS);
    });
    form.addEventListener("submit", async (event) => {
      // Enter opens the first match; the filter's page is the way without JavaScript.
      event.preventDefault();
      clearTimeout(timer);
      await load(box, input.value.trim());
      const first = box.querySelector(".ref-switch-list a");
      if (first) window.location.assign(first.href);
    });
    box.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && box.open) {
        box.open = false;
        box.querySelector("summary").focus();
        event.preventDefault();
        return;
      }
      if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
      const all = links(box);
      if (!all.length) return;
      const at = all.indexOf(document.activeElement);
      const step = event.key === "ArrowDown" ? 1 : -1;
      const next = at < 0 ? (step > 0 ? 0 : all.length - 1) : at + step;
      if (next < 0) input.focus();
      else all[Math.min(next, all.length - 1)].focus();
      event.preventDefault();
    });
    document.addEventListener("click", (event) => {
      if (box.open && !box.contains(event.target)) box.open = false;
    });
  }

  document.querySelectorAll("details.ref-switch").forEach(setUp);
})();
