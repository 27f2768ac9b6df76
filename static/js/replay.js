// Trajectory replay: show one step at a time with first/previous/play/next/last, a jump slider,
// a clickable step strip and the arrow keys. Without JavaScript every step stays visible.
(function () {
  "use strict";
  const root = document.querySelector("[data-replay]");
  if (!root) return;
  const steps = Array.from(root.querySelectorAll(".step"));
  if (!steps.length) return;
  document.documentElement.classList.add("js");
  const strip = Array.from(root.querySelectorAll(".step-strip [data-jump]"));
  const range = root.querySelector('[data-action="jump"]');
  const position = root.querySelector("[data-position]");
  const playButton = root.querySelector('[data-action="play"]');
  const showAllBox = root.querySelector('[data-action="all"]');
  const PLAY_MS = 1200;
  let current = 0;
  let timer = null;

  function show(index) {
    current = Math.max(0, Math.min(steps.length - 1, index));
    const all = showAllBox && showAllBox.checked;
    steps.forEach(function (step, i) { step.hidden = !all && i !== current; });
    strip.forEach(function (button, i) { button.classList.toggle("current", i === current); });
    if (range) range.value = String(current);
    if (position) position.textContent = "Step " + (current + 1) + " of " + steps.length;
    root.dataset.current = String(current);
    if (all) steps[current].scrollIntoView({ block: "nearest" });
    if (current === steps.length - 1) stop();
  }
  function stop() {
    if (timer) clearInterval(timer);
    timer = null;
    if (playButton) playButton.textContent = "▶ Play";
  }
  function play() {
    if (timer) { stop(); return; }
    if (current === steps.length - 1) show(0);
    playButton.textContent = "⏸ Pause";
    timer = setInterval(function () { show(current + 1); }, PLAY_MS);
  }
  root.addEventListener("click", function (event) {
    const target = event.target.closest("[data-action], [data-jump]");
    if (!target) return;
    if (target.dataset.jump !== undefined) { stop(); show(Number(target.dataset.jump)); return; }
    switch (target.dataset.action) {
      case "first": stop(); show(0); break;
      case "prev": stop(); show(current - 1); break;
      case "next": stop(); show(current + 1); break;
      case "last": stop(); show(steps.length - 1); break;
      case "play": play(); break;
    }
  });
  if (range) range.addEventListener("input", function () { stop(); show(Number(range.value)); });
  if (showAllBox) showAllBox.addEventListener("change", function () { show(current); });
  document.addEventListener("keydown", function (event) {
    if (event.target.closest("input, textarea, select")) return;
    if (event.key === "ArrowRight") { stop(); show(current + 1); }
    else if (event.key === "ArrowLeft") { stop(); show(current - 1); }
    else if (event.key === "Home") { stop(); show(0); }
    else if (event.key === "End") { stop(); show(steps.length - 1); }
    else if (event.key === " ") { event.preventDefault(); play(); }
  });
  const fromHash = steps.findIndex(function (step) { return "#" + step.id === location.hash; });
  show(fromHash >= 0 ? fromHash : 0);
})();
