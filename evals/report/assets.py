"""The HTML report's inline style and script (hashed into its Content-Security-Policy)."""

CSS = """
:root{--fg:#1d232b;--muted:#5b6672;--line:#d9dee4;--soft:#f4f6f8;--good:#1a7f37;--bad:#c62828;
--neutral:#6b7785;--mark:#ffe27a}
*{box-sizing:border-box}
body{margin:0;color:var(--fg);background:#fff;
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",Arial,sans-serif}
main{max-width:1240px;margin:0 auto;padding:20px 24px 48px}
h1{font-size:22px;margin:0 0 8px}h3{font-size:15px;margin:16px 0 6px}
h4{font-size:14px;margin:14px 0 4px}
h2{font-size:18px;margin:30px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0;color:var(--muted)}
.facts dt{font-weight:600}.facts dd{margin:0}.note,.desc,.p{color:var(--muted)}
.desc{font-size:12px;font-weight:400}.scroll{overflow-x:auto}
table{border-collapse:collapse;margin:6px 0}
th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
thead th{background:var(--soft);font-weight:600}
#summary td span{display:block;white-space:nowrap;font-variant-numeric:tabular-nums}
.mean{font-size:15px}.delta,.p{font-size:12px}
.better{color:var(--good)}.worse{color:var(--bad)}.unclear{color:var(--neutral)}
.tag{font-size:11px;background:var(--soft);border:1px solid var(--line);border-radius:3px;
padding:0 4px;font-weight:400}
.forest{display:flex;flex-wrap:wrap;gap:4px 24px}
svg.plot text{font-size:12px;fill:var(--fg)}svg.plot .title{font-weight:600;text-anchor:middle}
svg.plot .tick{fill:var(--muted);text-anchor:middle;font-size:11px}svg.plot .label{text-anchor:end}
svg.plot .zero{stroke:#9aa4ae;stroke-dasharray:3 3}svg.plot .ci{stroke-width:2.5}
svg.plot .better line,svg.plot .better circle{stroke:var(--good);fill:var(--good)}
svg.plot .worse line,svg.plot .worse circle{stroke:var(--bad);fill:var(--bad)}
svg.plot .unclear line,svg.plot .unclear circle{stroke:var(--neutral);fill:var(--neutral)}
svg.risk .frame{fill:none;stroke:var(--line)}svg.risk text{stroke:none}
svg.risk .curve{fill:none;stroke-width:2}
svg.risk .c0{stroke:#1f77b4}svg.risk .c1{stroke:#d62728}svg.risk .c2{stroke:#2ca02c}
svg.risk .c3{stroke:#9467bd}svg.risk .c4{stroke:#ff7f0e}svg.risk .c5{stroke:#17becf}
.filters{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin:8px 0 12px}
.filters input[type=search]{min-width:280px;padding:4px 6px}#filter-count{color:var(--muted)}
details.question{border:1px solid var(--line);border-radius:4px;margin:6px 0}
details.question>summary{cursor:pointer;padding:6px 10px;background:var(--soft)}
details.question .body{padding:2px 12px 10px}
.kind{font-size:11px;text-transform:uppercase;color:var(--muted);margin:0 4px}
.badges{float:right}.badge{font-size:11px;border:1px solid var(--line);border-radius:3px;
padding:0 4px;margin-left:4px;background:#fff;font-variant-numeric:tabular-nums}
.gold{margin:4px 0;padding-left:20px}.where{color:var(--muted);font-size:12px}
table.hits{width:100%}.hits td.text{white-space:pre-wrap;width:60%;font-size:12.5px}
.hits .loc{white-space:nowrap}.hits .crumbs{color:var(--fg);margin-top:2px}
mark{background:var(--mark)}
tr.rel1>td:first-child,tr.rel2>td:first-child{box-shadow:inset 3px 0 var(--good)}
.verdict.verified{color:var(--good)}.verdict.drifted{color:#b26a00}
.verdict.unresolvable{color:var(--bad)}.verdict.unchecked,.abstained{color:var(--muted)}
.view{margin-left:4px;font-size:12px}.view button{font-size:11px;padding:0 4px}
.view code{display:block;user-select:all;background:var(--soft);padding:2px 4px;
word-break:break-all}.noview{color:var(--muted);font-size:12px}
[hidden]{display:none!important}
"""

SCRIPT = """
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("drilldown").textContent);
  var text = document.getElementById("filter-text");
  var kind = document.getElementById("filter-kind");
  var differs = document.getElementById("filter-differs");
  var count = document.getElementById("filter-count");
  var items = Array.prototype.slice.call(document.querySelectorAll("details.question"));
  var segmentChars = {};
  function passage(index) {
    // [doc_id, start, end, text, place, chunk id]: a slice, in code points, of a
    // stitched segment, its [heading path, source label] (null when it has neither) and
    // the id of a chunk it was shown as.
    var p = data.passages[index], seg = data.segments[p[0]];
    if (!segmentChars[p[0]]) { segmentChars[p[0]] = Array.from(seg[2]); }
    var chars = segmentChars[p[0]].slice(p[1], p[1] + p[2]);
    return [seg[0], seg[1] + p[1], seg[1] + p[1] + p[2], chars.join(""),
            p.length > 3 ? data.places[p[3]] : null, data.ids[index]];
  }
  function view(id, start, end) {
    // The citation page's command: grk open opens it (a static file cannot serve it).
    var words = ["grk open", id];
    if (start !== undefined) { words.push("--start", String(start), "--end", String(end)); }
    if (data.home) { words.push(data.home); }
    var box = el("span", "view"), button = el("button", "", "view");
    var command = el("code", "", words.join(" "));
    button.type = "button";
    command.hidden = true;
    button.addEventListener("click", function () { command.hidden = !command.hidden; });
    box.appendChild(button);
    box.appendChild(command);
    return box;
  }
  function holder(q, g) {
    // A chunk id of a hit shown for q whose passage holds the gold span g whole.
    for (var s = 0; s < q.stages.length; s++) {
      var hits = q.stages[s][3];
      for (var i = 0; i < hits.length; i++) {
        var p = data.passages[hits[i][0]], seg = data.segments[p[0]];
        var start = seg[1] + p[1];
        if (seg[0] === g[0] && start <= g[1] && g[2] <= start + p[2] &&
            data.ids[hits[i][0]]) { return data.ids[hits[i][0]]; }
      }
    }
    return "";
  }
  function where(p) {
    // The document and span; beside them the source (pages, bytes), under them the headings.
    var cell = el("td", "desc", p[0] + " [" + p[1] + ", " + p[2] + ")");
    if (p[4] && p[4][1]) { cell.appendChild(el("span", "loc", " · " + p[4][1])); }
    if (p[4] && p[4][0].length) {
      cell.appendChild(el("div", "crumbs", p[4][0].join(" \\u203a ")));  // A › B › C
    }
    if (p[5]) { cell.appendChild(view(p[5])); }
    return cell;
  }
  function el(tag, cls, content) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (content !== undefined) { node.textContent = content; }
    return node;
  }
  function marked(passage, gold) {
    // Code-point offsets: slice Array.from(text), not the UTF-16 string.
    var chars = Array.from(passage[3]), spans = [], out = el("td", "text"), cursor = 0;
    gold.forEach(function (g) {
      if (g[0] === passage[0] && g[1] < passage[2] && passage[1] < g[2]) {
        spans.push([Math.max(g[1], passage[1]) - passage[1],
                    Math.min(g[2], passage[2]) - passage[1]]);
      }
    });
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var merged = [];
    spans.forEach(function (s) {
      var start = Math.max(0, s[0]), end = Math.min(chars.length, s[1]);
      var last = merged[merged.length - 1];
      if (last && start <= last[1]) { last[1] = Math.max(last[1], end); }
      else if (start < end) { merged.push([start, end]); }
    });
    merged.forEach(function (m) {
      out.appendChild(document.createTextNode(chars.slice(cursor, m[0]).join("")));
      out.appendChild(el("mark", "", chars.slice(m[0], m[1]).join("")));
      cursor = m[1];
    });
    out.appendChild(document.createTextNode(chars.slice(cursor).join("")));
    return out;
  }
  function stageBlock(body, name, entry, gold) {
    if (entry[0]) {
      body.appendChild(el("h4", "", name));
      body.appendChild(el("p", "abstained", "abstained (returned nothing)"));
      return;
    }
    var head = el("h4", "", name + " ");
    var scores = entry[2] ? data.measures.map(function (m, i) {
      return m + " " + (entry[2][i] === null ? "n/a" : entry[2][i].toFixed(3));
    }).join(" · ") : "";
    head.appendChild(el("span", "desc", "top " + entry[3].length + " of " + entry[1] +
                        (scores ? " · " + scores : "")));
    body.appendChild(head);
    var table = el("table", "hits"), row = el("tr");
    ["rank", "passage", "score", "rel", "verdict", "text (gold overlap marked)"].forEach(
      function (h) { row.appendChild(el("th", "", h)); });
    table.appendChild(el("thead")).appendChild(row);
    var rows = table.appendChild(el("tbody"));
    entry[3].forEach(function (h, i) {
      var p = passage(h[0]), tr = el("tr", "rel" + Math.min(h[2], 2));
      var verdict = data.verdicts[h[3]];
      tr.appendChild(el("td", "", String(i + 1)));
      tr.appendChild(where(p));
      tr.appendChild(el("td", "", String(h[1])));
      tr.appendChild(el("td", "", String(h[2])));
      tr.appendChild(el("td", "verdict " + verdict, verdict));
      tr.appendChild(marked(p, gold));
      rows.appendChild(tr);
    });
    body.appendChild(table);
  }
  function render(details) {
    var body = details.querySelector(".body");
    if (body.childNodes.length) { return; }
    var q = data.questions[Number(details.dataset.index)];
    var facts = "traits: " + (q.traits.join(", ") || "none");
    if (q.domain) { facts += " · domain: " + q.domain; }
    if (q.split) { facts += " · split: " + q.split; }
    body.appendChild(el("p", "traits", facts));
    body.appendChild(el("h4", "", "Gold"));
    var list = body.appendChild(el("ul", "gold"));
    if (!q.gold.length) {
      list.appendChild(el("li", "", "none: the corpus cannot answer this question"));
    }
    q.gold.forEach(function (g) {
      var li = el("li");
      li.appendChild(el("span", "where", g[0] + " [" + g[1] + ", " + g[2] + ") "));
      li.appendChild(el("q", "", g[3]));
      var id = holder(q, g);
      li.appendChild(id ? view(id, g[1], g[2])
                        : el("span", "noview", " (no view: no shown hit holds it whole)"));
      list.appendChild(li);
    });
    data.stages.forEach(function (name, i) { stageBlock(body, name, q.stages[i], q.gold); });
  }
  function apply() {
    var needle = text.value.trim().toLowerCase();
    var shown = [];
    items.forEach(function (d) {
      var ok = (!needle || d.dataset.search.indexOf(needle) !== -1) &&
        (!kind.value || d.dataset.kind === kind.value) &&
        (!differs.checked || d.dataset.differs === "1");
      d.hidden = !ok;
      if (ok) { shown.push(d); }
    });
    count.textContent = shown.length + " of " + items.length + " questions";
    return shown;
  }
  function setAll(open) {
    items.forEach(function (d) { if (!d.hidden) { d.open = open; } });
  }
  items.forEach(function (d) {
    d.addEventListener("toggle", function () { if (d.open) { render(d); } });
  });
  var hash = "";
  try { hash = decodeURIComponent(window.location.hash.slice(1)); } catch (e) { hash = ""; }
  if (hash.indexOf("q=") === 0) { text.value = hash.slice(2); }
  text.addEventListener("input", apply);
  kind.addEventListener("change", apply);
  differs.addEventListener("change", apply);
  document.getElementById("expand-all").addEventListener("click", function () { setAll(true); });
  document.getElementById("collapse-all").addEventListener("click", function () { setAll(false); });
  var first = apply();
  if (text.value && first.length === 1) { first[0].open = true; render(first[0]); }
})();
"""
