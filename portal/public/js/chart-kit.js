// What every dashboard chart shares (loaded before each page's chart script): the palette, the
// USD tick format, the filled-line dataset and the options of an un-animated, fixed-height chart.
(function () {
  'use strict';
  window.svcCharts = {
    palette: ['#3b4bd1', '#17a589', '#e67e22', '#8e44ad', '#c0392b', '#2e86c1', '#7f8c8d', '#d4ac0d'],
    money: function (v) {
      return v >= 1 ? '$' + v.toFixed(2) : '$' + v.toPrecision(2);
    },
    /** A filled line of one series (requests, cost). */
    area: function (label, data, color, fill) {
      return { label: label, data: data, borderColor: color, backgroundColor: fill, fill: true, tension: 0.25, pointRadius: 0 };
    },
    /** Options: no animation, no vertical grid, the y axis from 0 with these ticks. */
    options: function (ticks, stacked) {
      return {
        maintainAspectRatio: false,
        animation: false,
        scales: {
          x: { stacked: Boolean(stacked), grid: { display: false } },
          y: { stacked: Boolean(stacked), beginAtZero: true, ticks: ticks },
        },
      };
    },
  };
})();
