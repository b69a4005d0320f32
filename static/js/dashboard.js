// The dashboard's charts, drawn from the figures the page carries (#dashboard-metrics)
// and drawn again each time the live panel is swapped in.
(function () {
  "use strict";
  var palette = {allow: "#1d7a3a", deny: "#b3261e", require_approval: "#c2410c"};
  var charts = {};

  function metrics() {
    return JSON.parse(document.getElementById("dashboard-metrics").textContent);
  }

  function callsData(m) {
    return {
      labels: m.calls_per_hour.labels,
      datasets: Object.entries(m.calls_per_hour.series).map(function (entry) {
        return {label: entry[0], data: entry[1], backgroundColor: palette[entry[0]] || "#5b6475"};
      })
    };
  }

  function denialsData(m) {
    return {
      labels: m.denials_by_rule.labels,
      datasets: [{label: "denials", data: m.denials_by_rule.counts, backgroundColor: "#b3261e"}]
    };
  }

  function draw() {
    var m = metrics();
    if (!charts.calls) {
      charts.calls = new Chart(document.getElementById("chart-calls"), {
        type: "bar",
        data: callsData(m),
        options: {
          animation: false,
          scales: {x: {stacked: true}, y: {stacked: true, beginAtZero: true, ticks: {precision: 0}}}
        }
      });
      charts.denials = new Chart(document.getElementById("chart-denials"), {
        type: "bar",
        data: denialsData(m),
        options: {
          animation: false,
          indexAxis: "y",
          plugins: {legend: {display: false}},
          scales: {x: {beginAtZero: true, ticks: {precision: 0}}}
        }
      });
    } else {
      charts.calls.data = callsData(m); charts.calls.update();
      charts.denials.data = denialsData(m); charts.denials.update();
    }
  }

  if (!document.getElementById("dashboard-metrics") || !window.Chart) { return; }
  draw();
  // The badge changes live over the socket; the inbox figure is read again at once, from
  // the same count, rather than at the next poll.
  document.body.addEventListener("htmx:wsAfterMessage", function () {
    document.body.dispatchEvent(new Event("inbox-changed"));
  });
  document.body.addEventListener("htmx:afterSettle", function () {
    if (document.getElementById("dashboard-metrics")) { draw(); }
  });
})();
