// Draws the usage page's charts with Chart.js from the numbers in #usage-data (the table below
// the charts holds the same numbers, so the page is complete without this script).
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('usage-data').textContent);
  if (typeof Chart === 'undefined' || !window.svcCharts) return;
  var palette = window.svcCharts.palette;
  var money = window.svcCharts.money;
  var costSets = data.groups.length
    ? data.groups.map(function (g, i) {
        return { label: g.label, data: g.cost, backgroundColor: palette[i % palette.length], stack: 'cost' };
      })
    : [{ label: 'Cost (USD)', data: data.cost, backgroundColor: palette[0] }];
  new Chart(document.getElementById('usage-cost-chart'), {
    type: 'bar',
    data: { labels: data.labels, datasets: costSets },
    options: {
      maintainAspectRatio: false,
      animation: false,
      scales: { x: { stacked: true, grid: { display: false } }, y: { stacked: true, beginAtZero: true, ticks: { callback: money } } },
      plugins: {
        tooltip: {
          callbacks: {
            label: function (c) {
              return c.dataset.label + ': ' + money(c.parsed.y);
            },
          },
        },
      },
    },
  });
  new Chart(document.getElementById('usage-requests-chart'), {
    type: 'line',
    data: {
      labels: data.labels,
      datasets: [
        {
          label: 'Requests',
          data: data.requests,
          borderColor: palette[1],
          backgroundColor: 'rgba(23,165,137,0.15)',
          fill: true,
          tension: 0.25,
          pointRadius: 0,
        },
      ],
    },
    options: {
      maintainAspectRatio: false,
      animation: false,
      scales: { y: { beginAtZero: true, ticks: { precision: 0 } }, x: { grid: { display: false } } },
    },
  });
  document.documentElement.setAttribute('data-charts', 'drawn');
})();
