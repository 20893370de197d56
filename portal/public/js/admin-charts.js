// Draws the administration overview's charts with Chart.js from the numbers in #admin-data
// (chart-kit.js provides the shared pieces).
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('admin-data').textContent);
  if (typeof Chart === 'undefined' || !window.svcCharts) return;
  var kit = window.svcCharts;
  new Chart(document.getElementById('admin-requests-chart'), {
    type: 'bar',
    data: {
      labels: data.labels,
      datasets: [
        { label: 'Requests', data: data.requests, backgroundColor: kit.palette[0] },
        { label: 'Failed', data: data.errors, backgroundColor: kit.palette[4] },
      ],
    },
    options: kit.options({ precision: 0 }),
  });
  new Chart(document.getElementById('admin-cost-chart'), {
    type: 'line',
    data: { labels: data.labels, datasets: [kit.area('Cost', data.cost, kit.palette[1], 'rgba(23,165,137,0.15)')] },
    options: kit.options({ callback: kit.money }),
  });
  document.documentElement.setAttribute('data-charts', 'drawn');
})();
