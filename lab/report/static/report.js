// Counts the charts that really rendered (an inline SVG with a non-empty box, or a loaded
// image) into <body data-rendered>, so a headless browser can check the page from outside
// (tests/test_report.py). Inlined into report.html at render time (lab/report/html.py).
(function () {
  function count() {
    var figures = document.querySelectorAll('figure.chart'), n = 0;
    figures.forEach(function (f) {
      var svg = f.querySelector('svg'), img = f.querySelector('img');
      if (svg) {
        var box = svg.getBoundingClientRect(), inner = svg.getBBox();
        if (box.width > 0 && box.height > 0 && inner.width > 0) n++;
      } else if (img && img.complete && img.naturalWidth > 0) n++;
    });
    document.body.setAttribute('data-charts', String(figures.length));
    document.body.setAttribute('data-rendered', String(n));
  }
  count();
  window.addEventListener('load', count);
})();
