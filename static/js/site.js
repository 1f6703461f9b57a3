// Progressive enhancement only: every page works without JavaScript.
// Select the whole value of read-only fields (clone URL, new token) when they get focus.
document.addEventListener("focusin", (event) => {
  const target = event.target;
  if (target instanceof HTMLInputElement && target.hasAttribute("data-select-on-focus")) {
    target.select();
  }
});
