// Filters by status, tag and host; the state lives in the URL fragment
// (#status=drift&tag=sysctl&host=gpu-0) so a filtered view can be bookmarked.
(function () {
  var form = document.getElementById("filters");
  var keys = ["status", "tag", "host"];
  function read() {
    var p = new URLSearchParams(location.hash.slice(1)), s = {};
    keys.forEach(function (k) { s[k] = p.get(k) || ""; });
    return s;
  }
  function hostMatches(names, wanted) {
    return !wanted || (names || "").split(" ").some(function (n) { return n.indexOf(wanted) >= 0; });
  }
  function rowMatches(el, s) {
    var tagged = el.hasAttribute("data-tags");
    return (!s.status || el.dataset.status === s.status) &&
      (!s.tag || (tagged && (" " + el.dataset.tags + " ").indexOf(" " + s.tag + " ") >= 0)) &&
      hostMatches(el.dataset.hosts || el.dataset.host, s.host);
  }
  function apply(s) {
    keys.forEach(function (k) { form.elements[k].value = s[k]; });
    document.querySelectorAll("tr.task, li.finding, #gpu tr[data-row]").forEach(function (el) {
      el.hidden = !rowMatches(el, s);
    });
    var sections = document.querySelectorAll("section.host"), shown = 0;
    sections.forEach(function (sec) {
      var rows = sec.querySelectorAll("tr.task:not([hidden])").length;
      var own = !s.tag && (!s.status || sec.dataset.status === s.status);
      sec.hidden = !(hostMatches(sec.dataset.host, s.host) && (rows > 0 || own));
      if (!sec.hidden) shown++;
    });
    document.getElementById("shown").textContent = shown + " of " + sections.length + " hosts shown";
  }
  form.addEventListener("input", function () {
    var p = new URLSearchParams();
    keys.forEach(function (k) { if (form.elements[k].value) p.set(k, form.elements[k].value); });
    history.replaceState(null, "", "#" + p.toString());
    apply(read());
  });
  form.addEventListener("submit", function (e) { e.preventDefault(); });
  window.addEventListener("hashchange", function () { apply(read()); });
  apply(read());
})();
