// Draws a usage report's cost per day (stacked by group) from #report-data; the table below the
// chart holds the same numbers, so the page is complete without this script.
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('report-data').textContent);
  if (!data || typeof Chart === 'undefined' || !window.svcCharts) return;
  var palette = window.svcCharts.palette;
  new Chart(document.getElementById('report-chart'), {
    type: 'bar',
    data: {
      labels: data.labels,
      datasets: data.series.map(function (s, i) {
        return { label: s.label, data: s.data, backgroundColor: palette[i % palette.length], stack: 'cost' };
      }),
    },
    options: window.svcCharts.options({ callback: window.svcCharts.money }, true),
  });
  document.documentElement.setAttribute('data-charts', 'drawn');
})();
