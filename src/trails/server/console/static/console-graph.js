/* trails console: draw a session's provenance graph with dagre (vendored beside this file).
   The page holds the graph as JSON (<script type="application/json" id="prov-graph-data">);
   this lays it out in layers (causes left, effects right) and draws it as SVG into
   #prov-graph. Every text is set with textContent: labels are recorded data, never markup. */
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var COLOURS = {
    used: "#2f6fd3", wasGeneratedBy: "#1c8a4a", wasInformedBy: "#7a4cc2",
    wasAssociatedWith: "#b06a12", actedOnBehalfOf: "#c0392b", wasDerivedFrom: "#16808a",
    wasAttributedTo: "#8a6d16", hadPlan: "#6b7280"
  };
  var FILL = { activity: "#dbe4ff", entity: "#fff7b8", agent: "#ffe1b0" };

  function el(name, attrs, parent) {
    var node = document.createElementNS(NS, name);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (parent) { parent.appendChild(node); }
    return node;
  }

  function titled(node, text) {
    var title = el("title", {}, node);
    title.textContent = text;
  }

  function draw(box, data) {
    var g = new dagre.graphlib.Graph({ multigraph: true });
    g.setGraph({ rankdir: "RL", nodesep: 14, ranksep: 46, edgesep: 8, marginx: 8, marginy: 8 });
    g.setDefaultEdgeLabel(function () { return {}; });
    data.nodes.forEach(function (n) {
      g.setNode(n.id, { width: Math.max(64, n.label.length * 6.4 + 18), height: 30, data: n });
    });
    data.edges.forEach(function (e, i) {
      // an entity sits next to the activity that used or made it; agents' edges pull least
      var weight = { used: 4, wasGeneratedBy: 4, wasInformedBy: 2 }[e.relation] || 1;
      g.setEdge(e.source, e.target, { data: e, weight: weight }, "e" + i);
    });
    dagre.layout(g);
    var size = g.graph();
    var svg = el("svg", {
      xmlns: NS, "class": "prov-graph", role: "img",
      width: Math.ceil(size.width), height: Math.ceil(size.height),
      viewBox: "0 0 " + Math.ceil(size.width) + " " + Math.ceil(size.height)
    });
    titled(svg, "Provenance graph: " + data.nodes.length + " nodes, " + data.edges.length + " relations");
    var defs = el("defs", {}, svg);
    Object.keys(COLOURS).forEach(function (r) {
      var m = el("marker", { id: "arrow-" + r, viewBox: "0 0 10 10", refX: "10", refY: "5",
        markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" }, defs);
      el("path", { d: "M0,0 L10,5 L0,10 z", fill: COLOURS[r] }, m);
    });
    var edges = el("g", { "class": "edges" }, svg);
    g.edges().forEach(function (ref) {
      var edge = g.edge(ref), e = edge.data;
      var d = edge.points.map(function (p, i) {
        return (i ? "L" : "M") + p.x.toFixed(1) + "," + p.y.toFixed(1);
      }).join(" ");
      var path = el("path", {
        "class": "edge" + (e.path ? " on-path" : ""), d: d, fill: "none",
        stroke: COLOURS[e.relation] || "#777", "stroke-width": e.path ? "3" : "1.3",
        "marker-end": "url(#arrow-" + e.relation + ")", "data-relation": e.relation,
        "data-path": e.path ? "1" : "0"
      }, edges);
      titled(path, g.node(e.source).data.label + " " + e.relation + " " + g.node(e.target).data.label);
    });
    var nodes = el("g", { "class": "nodes" }, svg);
    g.nodes().forEach(function (id) {
      var n = g.node(id), d = n.data, x = n.x - n.width / 2, y = n.y - n.height / 2;
      var group = el("g", {
        "class": "node" + (d.path ? " on-path" : ""), "data-kind": d.kind,
        "data-label": d.label, "data-path": d.path ? "1" : "0", "data-end": d.end
      }, nodes);
      titled(group, d.full);
      var stroke = d.path ? "#d4145a" : "#333", width = d.path ? "3" : "1";
      if (d.kind === "entity") {
        el("ellipse", { cx: n.x, cy: n.y, rx: n.width / 2, ry: n.height / 2, fill: FILL.entity,
          stroke: stroke, "stroke-width": width }, group);
      } else if (d.kind === "agent") {
        el("polygon", { points: [x + "," + (y + 8), n.x + "," + y, (x + n.width) + "," + (y + 8),
          (x + n.width) + "," + (y + n.height), x + "," + (y + n.height)].join(" "),
          fill: FILL.agent, stroke: stroke, "stroke-width": width }, group);
      } else {
        el("rect", { x: x, y: y, width: n.width, height: n.height, rx: 3, fill: FILL.activity,
          stroke: stroke, "stroke-width": width }, group);
      }
      var text = el("text", { x: n.x, y: n.y + 4, "font-size": "11", "text-anchor": "middle" }, group);
      text.textContent = d.label;
    });
    box.textContent = "";
    box.appendChild(svg);
  }

  function legend(list, data) {
    data.relations.forEach(function (r) {
      if (!data.edges.some(function (e) { return e.relation === r; })) { return; }
      var item = document.createElement("li");
      var swatch = el("svg", { width: "28", height: "10", "aria-hidden": "true" });
      el("line", { x1: "0", y1: "5", x2: "28", y2: "5", stroke: COLOURS[r], "stroke-width": "3" }, swatch);
      item.appendChild(swatch);
      item.appendChild(document.createTextNode(" " + r));
      list.appendChild(item);
    });
  }

  function start() {
    var source = document.getElementById("prov-graph-data");
    var box = document.getElementById("prov-graph");
    if (!source || !box || typeof dagre === "undefined") { return; }
    var data = JSON.parse(source.textContent);
    draw(box, data);
    var list = document.getElementById("prov-legend");
    if (list) { legend(list, data); }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
