// The review queue of a round page: keys to move between proposals and decide them, and the
// "select group" / "select all" boxes of the bulk form. Plain JS, no library; the page works
// without it (every button is an ordinary form).
(function () {
  "use strict";
  const queue = document.getElementById("proposals");
  if (!queue) return;
  let current = -1;

  const cards = () => Array.from(queue.querySelectorAll("article.proposal"));
  const pending = (card) => card && card.dataset.status === "pending";

  function mark(index, scroll) {
    const all = cards();
    all.forEach((card) => card.classList.remove("is-current"));
    if (!all.length) return;
    current = Math.max(0, Math.min(index, all.length - 1));
    const card = all[current];
    card.classList.add("is-current");
    if (scroll) {
      card.focus({ preventScroll: true });
      card.scrollIntoView({ block: "nearest" });
    }
  }

  function nextPending(from) {
    const all = cards();
    for (let i = from; i < all.length; i += 1) if (pending(all[i])) return i;
    return from;
  }

  function decide(decision) {
    const card = cards()[current];
    const button = card && card.querySelector(`button[name=decision][value=${decision}]`);
    if (button) button.click();
  }

  function setBoxes(boxes, checked) {
    boxes.forEach((box) => { box.checked = checked; });
  }

  function groupBoxes(key) {
    const group = queue.querySelector(`[data-group="${key}"]`);
    return group ? Array.from(group.querySelectorAll("[data-select-proposal]")) : [];
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target.closest && target.closest("textarea, select, input[type=text], [contenteditable]")) return;
    const card = cards()[current];
    switch (event.key) {
      case "j": mark(current + 1, true); break;
      case "k": mark(current < 0 ? 0 : current - 1, true); break;
      case "x": {
        const box = card && card.querySelector("[data-select-proposal]");
        if (box) box.checked = !box.checked;
        break;
      }
      case "g": {
        const group = card && card.closest("[data-group]");
        const toggle = group && queue.querySelector(`[data-select-group="${group.dataset.group}"]`);
        if (toggle) { toggle.checked = !toggle.checked; setBoxes(groupBoxes(group.dataset.group), toggle.checked); }
        break;
      }
      case "a": decide("approve"); break;
      case "r": decide("reject"); break;
      default: return;
    }
    event.preventDefault();
  });

  // A decided card is swapped in by HTMX: keep the place and go on to the next pending one.
  document.body.addEventListener("htmx:afterSettle", () => {
    if (current >= 0) mark(nextPending(current), true);
  });

  queue.addEventListener("change", (event) => {
    const box = event.target;
    if (box.matches("[data-select-group]")) setBoxes(groupBoxes(box.dataset.selectGroup), box.checked);
    if (box.matches("[data-select-all]")) {
      setBoxes(Array.from(queue.querySelectorAll("[data-select-proposal], [data-select-group]")), box.checked);
    }
  });

  queue.addEventListener("click", (event) => {
    const card = event.target.closest && event.target.closest("article.proposal");
    if (card) mark(cards().indexOf(card), false);
  });
})();
