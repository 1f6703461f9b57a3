// Live import progress (progressive enhancement: without JavaScript the "Refresh" link does it).
// Polls GET /api/v1/imports/<id> every second and updates the status box; when the import
// ends, a finished one reloads the page (the repository's files appear) and a failed or
// cancelled one goes to the import's page, which says why.
(() => {
  const box = document.getElementById("import-status");
  if (!box || !box.dataset.importApi) return;
  const field = (name) => box.querySelector(`[data-import="${name}"]`);
  const set = (name, text) => { const el = field(name); if (el) el.textContent = text || ""; };
  let failures = 0;
  const poll = async () => {
    let data;
    try {
      const response = await fetch(box.dataset.importApi, {
        credentials: "same-origin", headers: { Accept: "application/json" }, cache: "no-store",
      });
      if (response.status === 404 || response.status === 403) return; // not ours to watch
      if (!response.ok) throw new Error(String(response.status));
      data = await response.json();
      failures = 0;
    } catch (error) {
      failures += 1;
      if (failures < 30) setTimeout(poll, 2000);
      return;
    }
    const progress = data.progress || {};
    set("phase", progress.phase);
    set("percent-text", progress.percent === null || progress.percent === undefined ? "" : `${progress.percent}%`);
    const bar = field("percent");
    if (bar) {
      if (progress.percent === null || progress.percent === undefined) bar.removeAttribute("value");
      else bar.value = progress.percent;
    }
    set("objects", progress.objects);
    set("received", progress.received);
    const cancelling = field("cancelling");
    if (cancelling) cancelling.hidden = !progress.cancelling;
    if (data.state === "queued" || data.state === "running") {
      setTimeout(poll, 1000);
    } else if (data.state === "done" && box.dataset.importReload !== "no") {
      window.location.reload();
    } else {
      window.location.assign(box.dataset.importPage);
    }
  };
  setTimeout(poll, 1000);
})();
