// Draws the autorouter page's charts with Chart.js from the numbers in #autorouter-data (the
// table holds the same numbers, so the page is complete without this script).
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('autorouter-data').textContent);
  if (typeof Chart === 'undefined' || !window.svcCharts) return;
  var palette = window.svcCharts.palette;
  var money = window.svcCharts.money;
  new Chart(document.getElementById('autorouter-models-chart'), {
    type: 'bar',
    data: {
      labels: data.labels,
      datasets: data.models.map(function (m, i) {
        return { label: m.label, data: m.requests, backgroundColor: palette[i % palette.length], stack: 'requests' };
      }),
    },
    options: {
      maintainAspectRatio: false,
      animation: false,
      scales: { x: { stacked: true, grid: { display: false } }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } },
    },
  });
  new Chart(document.getElementById('autorouter-cost-chart'), {
    type: 'line',
    data: {
      labels: data.labels,
      datasets: [
        {
          label: 'Cost',
          data: data.cost,
          borderColor: palette[0],
          backgroundColor: 'rgba(59,75,209,0.15)',
          fill: true,
          tension: 0.25,
          pointRadius: 0,
        },
        {
          label: 'On the comparison model',
          data: data.comparison,
          borderColor: palette[2],
          borderDash: [6, 4],
          fill: false,
          tension: 0.25,
          pointRadius: 0,
        },
      ],
    },
    options: {
      maintainAspectRatio: false,
      animation: false,
      scales: { x: { grid: { display: false } }, y: { beginAtZero: true, ticks: { callback: money } } },
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
  document.documentElement.setAttribute('data-charts', 'drawn');
})();
