// What every dashboard chart shares (loaded before each page's chart script): the palette, the
// USD tick format, the filled-line dataset and the options of an un-animated, fixed-height chart.
(function () {
  'use strict';
  // On a phone the dates of a month's days were drawn rotated, in 12 px, one per bar: unreadable
  // (outside probe). There: larger labels, a few of them, level; Chart.js skips the rest.
  if (typeof Chart !== 'undefined' && window.matchMedia && window.matchMedia('(max-width: 640px)').matches) {
    Chart.defaults.font.size = 13;
    Chart.defaults.scale.ticks.maxRotation = 0;
    Chart.defaults.scale.ticks.autoSkipPadding = 16;
  }
  window.svcCharts = {
    palette: ['#3b4bd1', '#17a589', '#e67e22', '#8e44ad', '#c0392b', '#2e86c1', '#7f8c8d', '#d4ac0d'],
    /** A USD tick: cents from $1 up, else two significant digits without trailing zeros or an exponent ($0.000008). */
    money: function (v) {
      if (v >= 1) return '$' + v.toFixed(2);
      if (v <= 0) return '$0';
      var digits = Math.min(9, Math.max(2, Math.ceil(-Math.log10(v)) + 1));
      return '$' + v.toFixed(digits).replace(/\.?0+$/, '');
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
