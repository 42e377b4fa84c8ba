// "Your turn" (issue #51): the part of assets/your_turn.js that every page runs at once, inline in <head>, after
// window.plmYourTurnConfig. The script itself comes from its own address (demo/kit/your_turn.py's ROUTE) and may load
// after the blocks mount: until then their calls wait in a queue, which the script replays.
(() => {
  if (window.plmYourTurn) return;
  const queue = [];
  const later = (name) => (...args) => { queue.push([name, args]); };
  window.plmYourTurn = {mount: later("mount"), map: later("map"), open: later("open"), queue};
  // ?check=<slug> (a teacher's link) becomes ?tab=<its tab>&check=<slug> before the page's router reads the
  // address, so the tab opens with its results; the script then opens the check once it is on screen.
  const checks = window.plmYourTurnConfig.checks;
  const query = new URLSearchParams(window.location.search);
  const asked = query.get("check");
  const tab = Object.keys(checks).find((t) => checks[t].includes(asked));
  if (asked && tab && query.get("tab") !== tab) {
    query.set("tab", tab);
    query.delete("preset");
    window.history.replaceState(null, "", "?" + query.toString());
  }
})();
