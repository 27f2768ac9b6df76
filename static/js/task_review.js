// The task review queue: keys choose a mark (1-4 or n/u/w/m), "/" focuses the note, Enter
// submits (Ctrl+Enter inside the note). Plain JS, no library; the page works without it.
(function () {
  "use strict";
  const form = document.getElementById("mark-form");
  if (!form) return;
  const note = form.querySelector("textarea[name=note]");
  const byKey = {};
  form.querySelectorAll("[data-keys]").forEach((label) => {
    label.dataset.keys.split(" ").forEach((key) => { byKey[key] = label; });
  });

  function choose(label) {
    form.querySelectorAll("[data-mark]").forEach((other) => other.classList.remove("btn-primary"));
    label.querySelector("input[type=radio]").checked = true;
    label.classList.add("btn-primary");
  }

  form.addEventListener("change", (event) => {
    const label = event.target.closest && event.target.closest("[data-mark]");
    if (label) choose(label);
  });

  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.metaKey) return;
    const typing = event.target === note;
    if (event.key === "Enter" && (!typing || event.ctrlKey)) {
      event.preventDefault();
      form.requestSubmit();
      return;
    }
    if (typing || event.ctrlKey) return;
    if (event.target.closest && event.target.closest("input[type=number], input[type=text], select")) return;
    if (event.key === "/") { event.preventDefault(); note.focus(); return; }
    const label = byKey[event.key.toLowerCase()];
    if (label) { event.preventDefault(); choose(label); }
  });
})();
