// libprof report page: draws one window's (or a job's) numbers from the JSON
// embedded in the page. Plain DOM, SVG and canvas; no library, no request.
(function () {
  'use strict';

  const DATA = JSON.parse(document.getElementById('prof-data').textContent);

  // ---- formatting: the summary's own rules (exporters/summary/text_table.cpp:
  // Grouped, Ms; exporters/common/format.cpp: FormatDuration, FormatBytes), written
  // again here because the page formats its tables in the browser.

  // Grouped(value, decimals): the same IEEE operations as the C++, so the
  // same digits.
  function grouped(value, decimals) {
    if (!isFinite(value)) value = 0;
    const negative = value < 0;
    const scale = Math.pow(10, decimals);
    const rounded = Math.round(Math.abs(value) * scale);
    const whole = Math.trunc(rounded / scale);
    const frac = rounded - whole * scale;
    let out = (negative ? '-' : '') + groupDigits(String(whole));
    if (decimals > 0) out += '.' + String(frac).padStart(decimals, '0');
    return out;
  }
  function groupDigits(digits) {
    let out = '';
    for (let i = 0; i < digits.length; ++i) {
      if (i && (digits.length - i) % 3 === 0) out += ',';
      out += digits[i];
    }
    return out;
  }
  const U = (v) => groupDigits(String(v));
  const D = (v) => grouped(v, 1);
  const Ms = (ns) => grouped(ns / 1e6, 3);
  const Mb = (bytes) => grouped(bytes / 1e6, 3);
  function duration(ns) {
    if (ns < 1e3) return ns.toFixed(0) + ' ns';
    if (ns < 1e6) return (ns / 1e3).toFixed(1) + ' \u00b5s';
    if (ns < 1e9) return (ns / 1e6).toFixed(2) + ' ms';
    return (ns / 1e9).toFixed(2) + ' s';
  }
  function bytes(b) {
    if (b < 1024) return b.toFixed(0) + ' B';
    if (b < 1024 * 1024) return (b / 1024).toFixed(1) + ' KiB';
    if (b < 1024 * 1024 * 1024) return (b / (1024 * 1024)).toFixed(1) + ' MiB';
    return (b / (1024 * 1024 * 1024)).toFixed(2) + ' GiB';
  }
  const MEM_KINDS = ['device', 'host pinned', 'managed', 'async pool', 'vmm'];
  const TENSOR_KIND = 100;  // report.h's kTensorSeriesKind
  const memKind = (k) => (k === TENSOR_KIND ? "PyTorch's tensors" : MEM_KINDS[k] || 'other');
  const deviceName = (d) => (d < 0 ? 'host' : String(d));

  // ---- DOM helpers

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') node.className = v;
      else if (k === 'text') node.textContent = v;
      else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    }
    for (const c of children) if (c != null) node.append(c);
    return node;
  }
  const SVG_NS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    for (const c of children) if (c != null) node.append(c);
    return node;
  }
  function section(id, title, note) {
    const s = el('section', { id });
    s.append(el('h2', { text: title }));
    if (note) s.append(el('p', { class: 'note', text: note }));
    return s;
  }

  const tooltip = el('div', { class: 'tooltip' });
  function showTip(event, lines) {
    tooltip.replaceChildren();
    lines.forEach((line, i) => {
      if (i) tooltip.append(el('br'));
      if (Array.isArray(line)) tooltip.append(el('b', { text: line[0] }), ' ' + line[1]);
      else tooltip.append(line);
    });
    tooltip.style.display = 'block';
    const x = Math.min(event.clientX + 14, window.innerWidth - tooltip.offsetWidth - 8);
    const y = event.clientY + 16 + tooltip.offsetHeight > window.innerHeight ? event.clientY - tooltip.offsetHeight - 8 : event.clientY + 16;
    tooltip.style.left = Math.max(4, x) + 'px';
    tooltip.style.top = Math.max(4, y) + 'px';
  }
  const hideTip = () => { tooltip.style.display = 'none'; };

  // A sortable table. columns: {title, key(row) for sorting, cell(row) text,
  // cls: 'name' | 'text' | undefined (number)}.
  function dataTable(id, columns, rows, options) {
    options = options || {};
    const table = el('table', { class: 'data', id });
    const head = el('tr');
    const body = el('tbody');
    let sortColumn = -1, ascending = false;
    function fill() {
      body.replaceChildren();
      const sorted = rows.slice();
      if (sortColumn >= 0) {
        const key = columns[sortColumn].key;
        sorted.sort((a, b) => {
          const x = key(a), y = key(b);
          const c = typeof x === 'string' ? x.localeCompare(y) : x - y;
          return ascending ? c : -c;
        });
      }
      for (const row of sorted) {
        const tr = el('tr');
        for (const c of columns) {
          const text = c.cell(row);
          const td = el('td', { class: c.cls || '', text });
          if (c.cls === 'name') td.title = text;
          if (c.indent) td.style.paddingLeft = (0.4 + 1.2 * c.indent(row)) + 'em';
          tr.append(td);
        }
        body.append(tr);
      }
      if (options.footer) body.append(options.footer());
    }
    columns.forEach((c, i) => {
      const th = el('th', { class: c.cls === 'name' || c.cls === 'text' ? 'text' : '', text: c.title, title: 'sort by ' + c.title });
      th.addEventListener('click', () => {
        ascending = sortColumn === i ? !ascending : c.cls === 'name' || c.cls === 'text';
        sortColumn = i;
        for (const other of head.children) other.classList.remove('sorted-asc', 'sorted-desc');
        th.classList.add(ascending ? 'sorted-asc' : 'sorted-desc');
        fill();
      });
      head.append(th);
    });
    table.append(el('thead', {}, head), body);
    fill();
    return rows.length || options.footer ? el('div', { class: 'scroll' }, table) : el('p', { class: 'none', text: options.empty || '(none)' });
  }

  // nsys-style time table (cuda_gpu_kern_sum, cuda_api_sum, cuda_gpu_mem_time_sum).
  function timeTable(id, rows, countTitle, nameTitle) {
    return dataTable(id, [
      { title: 'Time (%)', key: (r) => r.percent, cell: (r) => D(r.percent) },
      { title: 'Total Time (ns)', key: (r) => r.total, cell: (r) => U(r.total) },
      { title: countTitle, key: (r) => r.count, cell: (r) => U(r.count) },
      { title: 'Avg (ns)', key: (r) => r.avg, cell: (r) => D(r.avg) },
      { title: 'Med (ns)', key: (r) => r.med, cell: (r) => D(r.med) },
      { title: 'Min (ns)', key: (r) => r.min, cell: (r) => U(r.min) },
      { title: 'Max (ns)', key: (r) => r.max, cell: (r) => U(r.max) },
      { title: 'StdDev (ns)', key: (r) => r.stddev, cell: (r) => D(r.stddev) },
      { title: nameTitle, key: (r) => r.name, cell: (r) => r.name, cls: 'name' },
    ], rows);
  }

  // Category colours of the step-time breakdown (TimeBreakdown's order).
  const BREAKDOWN = [
    ['Kernel', '#2f6fb3'], ['Communication', '#8e5bb5'], ['Memcpy', '#2c9c8f'], ['Memset', '#7fbf6a'],
    ['Idle: CUDA call', '#e0a030'], ['Idle: sync', '#d0453b'], ['Idle: other', '#b9c0c8'],
  ];
  const BREAKDOWN_NOTES = [
    'a compute kernel ran', 'a communication (NCCL) kernel ran and no compute kernel', 'a copy ran and no kernel',
    'a memset ran and nothing else', 'the GPU was idle while a host thread was inside a CUDA call (launch, copy setup, runtime)',
    'the GPU was idle while a host thread waited in a synchronize', 'the GPU was idle and no host thread was in a CUDA call (Python, data loading, I/O)',
  ];

  function legend(items) {
    const l = el('div', { class: 'legend' });
    for (const [name, color, note] of items) {
      l.append(el('span', { title: note || '' }, el('span', { class: 'swatch', style: 'background:' + color }), name));
    }
    return l;
  }

  // The axis' top: the next 1, 2, 2.5 or 5 times a power of ten (in ms).
  function niceCeiling(ns) {
    const ms = ns / 1e6;
    const power = Math.pow(10, Math.floor(Math.log10(ms)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * power >= ms) return m * power * 1e6;
    return ns;
  }

  // Vertical stacked bars: bars = [{label, parts: [ns...], tip}].
  function stackedBars(bars, categories, unitLabel) {
    const width = Math.max(360, Math.min(1100, 70 + bars.length * 46));
    const height = 240, left = 64, bottom = 28, top = 10;
    const max = niceCeiling(Math.max(1, ...bars.map((b) => b.parts.reduce((a, x) => a + x, 0))));
    const chart = svg('svg', { class: 'chart', width, height, role: 'img' });
    const plotH = height - top - bottom;
    const slot = (width - left - 10) / Math.max(1, bars.length);
    const barW = Math.min(38, slot * 0.75);
    for (let i = 0; i <= 4; ++i) {
      const y = top + plotH - (plotH * i) / 4;
      chart.append(svg('line', { x1: left, x2: width - 10, y1: y, y2: y, stroke: '#e5e8ec' }));
      chart.append(svg('text', { x: left - 6, y: y + 4, 'text-anchor': 'end' }, String(+((max * i) / 4 / 1e6).toPrecision(4))));
    }
    chart.append(svg('text', { x: left - 6, y: height - 10, 'text-anchor': 'end' }, unitLabel));
    bars.forEach((bar, i) => {
      const x = left + i * slot + (slot - barW) / 2;
      let y = top + plotH;
      bar.parts.forEach((v, c) => {
        if (v <= 0) return;
        const h = (plotH * v) / max;
        y -= h;
        const rect = svg('rect', { x, y, width: barW, height: Math.max(h, 0.5), fill: categories[c][1] });
        rect.addEventListener('mousemove', (e) => showTip(e, [[bar.label, ''], [categories[c][0] + ':', Ms(v) + ' ms (' + D((100 * v) / Math.max(1, bar.total)) + '% of ' + Ms(bar.total) + ' ms)']]));
        rect.addEventListener('mouseleave', hideTip);
        chart.append(rect);
      });
      chart.append(svg('text', { x: x + barW / 2, y: height - 10, 'text-anchor': 'middle' }, bar.label));
    });
    return chart;
  }

  // ---- sections

  function overview(w) {
    const s = section('overview', 'Overview');
    s.append(el('pre', { class: 'header', id: 'summary-header', text: w.header.trimEnd() }));
    const cards = el('div', { class: 'cards' });
    const card = (big, small) => cards.append(el('div', { class: 'card' }, el('div', { class: 'big', text: big }), el('div', { class: 'small', text: small })));
    card(duration(w.span), 'window (steps ' + w.meta.first_step + '\u2013' + w.meta.last_step + ')');
    card(w.meta.gpu_timings ? D(w.busy_percent) + '%' : 'n/a', 'GPU busy (' + duration(w.busy) + ')');
    const kernelNs = w.kernels.reduce((a, r) => a + r.total, 0);
    const kernelCount = w.kernels.reduce((a, r) => a + r.count, 0);
    card(U(kernelCount), 'kernels, ' + duration(kernelNs) + ' of kernel time');
    if (w.latency[0] > 0) card(duration(w.latency[1]), 'median launch \u2192 GPU start (' + U(w.latency[0]) + ' launches)');
    if (w.idle_gaps > 0) card(duration(w.idle_gap_total), w.idle_gaps + ' GPU idle gaps of \u2265 1 ms');
    const lost = w.losses.reduce((a, x) => a + x, 0);
    if (lost > 0) card(U(lost), 'events lost (see the summary\u2019s Data loss)');
    s.append(cards);

    s.append(el('h3', { text: 'Findings' }));
    const list = el('div', { id: 'findings' });
    if (!w.findings.length) list.append(el('p', { class: 'none', text: 'none: no threshold in README.md \u201cReading the summary\u201d was crossed' }));
    for (const f of w.findings) {
      list.append(el('div', { class: 'finding', 'data-id': f.id },
        el('div', {}, el('span', { class: 'id', text: '[' + f.id + ']' }), el('span', { class: 'title', text: f.title })),
        el('div', { class: 'evidence' }, el('b', { text: 'evidence: ' }), f.evidence),
        el('div', { class: 'advice' }, el('b', { text: 'try: ' }), f.advice)));
    }
    s.append(list);
    return s;
  }

  function stepBreakdown(w) {
    const s = section('steps', 'Step-time breakdown',
      'Each step\u2019s wall time, every moment counted once: while the GPU ran anything, by what ran (kernel before communication before copy before memset); while it ran nothing, by what the host was in. Hover a bar for its numbers.');
    if (!w.meta.gpu_timings) {
      s.append(el('p', { class: 'none', text: '(no GPU timings: CUPTI was not recording)' }));
      return s;
    }
    const bars = w.steps.map((r) => ({ label: String(r.step), parts: r.breakdown, total: r.wall }));
    if (!bars.length) bars.push({ label: 'window', parts: w.breakdown, total: w.span });
    s.append(legend(BREAKDOWN.map((c, i) => [c[0], c[1], BREAKDOWN_NOTES[i]])));
    s.append(stackedBars(bars, BREAKDOWN, 'ms / step'));
    const rows = w.steps.map((r) => ({ label: String(r.step), wall: r.wall, b: r.breakdown, busy: r.busy_percent, step: r.step }));
    const cols = [
      { title: 'Step', key: (r) => r.step, cell: (r) => r.label },
      { title: 'Wall', key: (r) => r.wall, cell: (r) => Ms(r.wall) },
    ].concat(BREAKDOWN.map((c, i) => ({ title: c[0], key: (r) => r.b[i], cell: (r) => Ms(r.b[i]) })));
    s.append(el('h3', { text: 'In milliseconds' }));
    s.append(dataTable('table-step-breakdown', cols, rows, {
      footer: () => {
        const tr = el('tr', { class: 'total' });
        tr.append(el('td', { text: 'window' }), el('td', { text: Ms(w.span) }));
        for (let i = 0; i < BREAKDOWN.length; ++i) tr.append(el('td', { text: Ms(w.breakdown[i]) }));
        return tr;
      },
    }));
    if (w.steps.length) {
      s.append(el('h3', { text: 'Per step' }));
      if (w.steps_total > w.steps.length) {
        s.append(el('p', { class: 'note', text: w.steps_total + ' steps: the first ' + w.steps_first + ' and the ' +
          (w.steps.length - w.steps_first) + ' slowest of the others are listed here and above; every step is in the trace as ProfilerStep#N.' }));
      }
      s.append(dataTable('table-steps', [
        { title: 'Step', key: (r) => r.step, cell: (r) => String(r.step) },
        { title: 'Wall (ms)', key: (r) => r.wall, cell: (r) => Ms(r.wall) },
        { title: 'GPU busy (%)', key: (r) => r.busy_percent, cell: (r) => D(r.busy_percent) },
        { title: 'Kernels', key: (r) => r.kernels, cell: (r) => U(r.kernels) },
        { title: 'Launches', key: (r) => r.launches, cell: (r) => U(r.launches) },
        { title: 'Syncs', key: (r) => r.syncs, cell: (r) => U(r.syncs) },
        { title: 'Copies', key: (r) => r.copies, cell: (r) => U(r.copies) },
        { title: 'Allocs/frees', key: (r) => r.allocs, cell: (r) => U(r.allocs) },
      ], w.steps));
    }
    return s;
  }

  function idleBreakdown(w) {
    const s = section('idle', 'GPU idle breakdown',
      'Idle time between consecutive pieces of work on each stream, split as Holistic Trace Analysis does: host wait (the next launch call began only after the stream had gone idle: the host was late), kernel wait (queued in time, gap under 30 ns: launch overhead), other (queued in time but started later: waiting on another stream, an event or the device).');
    const cats = [['Host wait', '#e0a030'], ['Kernel wait', '#2f6fb3'], ['Other', '#b9c0c8']];
    const rows = w.stream_idle.map((r) => ({ device: r[0], stream: r[1], gaps: r[2], parts: [r[3], r[4], r[5]] }));
    if (!rows.length) {
      s.append(el('p', { class: 'none', text: '(no GPU work recorded)' }));
      return s;
    }
    s.append(legend(cats));
    const width = 700, barH = 18, left = 150;
    const chart = svg('svg', { class: 'chart', width, height: rows.length * (barH + 6) + 8 });
    rows.forEach((r, i) => {
      const total = r.parts.reduce((a, x) => a + x, 0);
      const y = 4 + i * (barH + 6);
      chart.append(svg('text', { x: left - 6, y: y + 13, 'text-anchor': 'end' }, 'GPU ' + r.device + ' stream ' + r.stream));
      let x = left;
      r.parts.forEach((v, c) => {
        if (v <= 0 || total <= 0) return;
        const wpx = ((width - left - 10) * v) / total;
        const rect = svg('rect', { x, y, width: Math.max(wpx, 0.5), height: barH, fill: cats[c][1] });
        rect.addEventListener('mousemove', (e) => showTip(e, [[cats[c][0] + ':', Ms(v) + ' ms, ' + D((100 * v) / total) + '% of this stream\u2019s ' + Ms(total) + ' ms idle']]));
        rect.addEventListener('mouseleave', hideTip);
        chart.append(rect);
        x += wpx;
      });
    });
    s.append(chart);
    s.append(dataTable('table-idle', [
      { title: 'Device', key: (r) => r.device, cell: (r) => String(r.device) },
      { title: 'Stream', key: (r) => r.stream, cell: (r) => String(r.stream) },
      { title: 'Gaps', key: (r) => r.gaps, cell: (r) => U(r.gaps) },
      { title: 'Host wait (ms)', key: (r) => r.parts[0], cell: (r) => Ms(r.parts[0]) },
      { title: 'Kernel wait (ms)', key: (r) => r.parts[1], cell: (r) => Ms(r.parts[1]) },
      { title: 'Other (ms)', key: (r) => r.parts[2], cell: (r) => Ms(r.parts[2]) },
    ], rows));
    return s;
  }

  // Stable colour per name.
  function hue(text) {
    let h = 0;
    for (let i = 0; i < text.length; ++i) h = (h * 31 + text.charCodeAt(i)) >>> 0;
    return h % 360;
  }
  function itemColor(name, kind) {
    if (name.startsWith('[CUDA memcpy')) return '#2c9c8f';
    if (name.startsWith('[CUDA memset')) return '#7fbf6a';
    if (kind === 'host') {
      if (/Synchronize|Wait|Query/.test(name)) return '#d0453b';
      if (/Launch/.test(name)) return '#5d8fd0';
      if (/Memcpy|Memset/.test(name)) return '#2c9c8f';
      if (/Malloc|Free|Alloc/.test(name)) return '#c78b2c';
      return '#8a96a3';
    }
    if (/nccl/i.test(name)) return '#8e5bb5';
    return 'hsl(' + (200 + (hue(name) % 60)) + ',55%,' + (38 + (hue(name) % 25)) + '%)';
  }

  // ---- the timeline: lanes on a canvas, zoomed and panned by the reader

  // The timeline's layout in CSS pixels: a lane's height, the time axis', the
  // steps' row's, and the lane labels' width on the left.
  const LANE_H = 20, AXIS_H = 22, STEP_H = 16, LABEL_W = 210;

  function timeline(w) {
    const s = section('timeline', 'Timeline',
      'One lane per GPU stream and per host thread that made CUDA calls, over the whole window. Scroll to zoom at the pointer, drag to pan, double-click to reset; hover an item for its name, duration and Python call site. Items closer than ' + duration(w.timeline.bin) + ' are drawn as one block (the page keeps the window small); the full trace has every event.');
    const tl = {
      w,
      data: w.timeline,  // {bin, steps: [[step, start, dur]], lanes: [{label, kind, items}]}
      S: w.strings,
      section: s,
      canvas: el('canvas'),
      view: [0, Math.max(1, w.span)],  // what is shown: ns from the window's start
      width: 1000,  // the canvas' CSS width, set again by each draw
      height: AXIS_H + STEP_H + w.timeline.lanes.length * LANE_H + 6,
      drag: null,  // while the reader drags: {x: where it began, view: the view then}
    };
    s.append(timelineControls(tl), el('div', { class: 'timeline-wrap' }, tl.canvas));
    listenTimeline(tl);
    requestAnimationFrame(() => drawTimeline(tl));
    const trace = w.trace_file || '<trace>.pt.trace.json';
    s.append(el('p', { class: 'note', text: 'Every event, zoomable to the nanosecond: open the trace in Perfetto (ui.perfetto.dev, \u201cOpen trace file\u201d), or from a shell with Perfetto\u2019s own script:' }));
    s.append(el('code', { class: 'cmd', id: 'perfetto-command', text: 'python3 open_trace_in_ui -i ' + trace + '   # tools/open_trace_in_ui in the Perfetto repository' }));
    return s;
  }

  function timelineControls(tl) {
    return el('div', { class: 'controls' },
      el('button', { text: 'zoom in', onclick: () => zoomTimeline(tl, 0.5) }), ' ',
      el('button', { text: 'zoom out', onclick: () => zoomTimeline(tl, 2) }), ' ',
      el('button', { text: 'reset', onclick: () => resetTimeline(tl) }), ' ',
      el('span', { class: 'note', id: 'timeline-range' }));
  }

  function resetTimeline(tl) {
    tl.view = [0, Math.max(1, tl.w.span)];
    drawTimeline(tl);
  }

  // Zooms by FACTOR (under 1: in) about CENTER (ns; the view's middle when
  // not given), showing at least a microsecond and nothing outside the window.
  function zoomTimeline(tl, factor, center) {
    const view = tl.view, span = tl.w.span;
    const c = center === undefined ? (view[0] + view[1]) / 2 : center;
    let a = c - (c - view[0]) * factor, b = c + (view[1] - c) * factor;
    if (b - a < 1000) { const m = (a + b) / 2; a = m - 500; b = m + 500; }
    tl.view = [Math.max(0, a), Math.min(span, b)];
    if (tl.view[1] <= tl.view[0]) tl.view = [0, Math.max(1, span)];
    drawTimeline(tl);
  }

  // Dragging: the view follows the pointer, as long as it stays inside the window.
  function panTimeline(tl, event) {
    const drag = tl.drag;
    const dt = ((drag.x - event.clientX) / (tl.width - LABEL_W - 8)) * (drag.view[1] - drag.view[0]);
    const len = drag.view[1] - drag.view[0];
    const a = Math.min(Math.max(0, drag.view[0] + dt), tl.w.span - len);
    tl.view = [a, a + len];
    drawTimeline(tl);
  }

  // The canvas x of time T (ns from the window's start).
  function timelineX(tl, t) {
    return LABEL_W + ((t - tl.view[0]) / (tl.view[1] - tl.view[0])) * (tl.width - LABEL_W - 8);
  }

  // Where EVENT is on the canvas: its pixels, the lane under it (negative
  // above the lanes) and the time under it.
  function timelinePoint(tl, event) {
    const r = tl.canvas.getBoundingClientRect();
    const px = event.clientX - r.left, py = event.clientY - r.top;
    const li = Math.floor((py - AXIS_H - STEP_H) / LANE_H);
    const t = tl.view[0] + ((px - LABEL_W) / (tl.width - LABEL_W - 8)) * (tl.view[1] - tl.view[0]);
    return { px, py, li, t };
  }

  // The first of ITEMS (sorted by start) that starts at or after T.
  function lowerBound(items, t) {
    let lo = 0, hi = items.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (items[m][0] < t) lo = m + 1; else hi = m; }
    return lo;
  }

  // Sizes the canvas to the page (sharp on high-density screens) and draws it all.
  function drawTimeline(tl) {
    const canvas = tl.canvas, height = tl.height;
    tl.width = Math.max(600, Math.min(1460, (tl.section.clientWidth || document.body.clientWidth - 40)));
    const ratio = window.devicePixelRatio || 1;
    canvas.width = tl.width * ratio;
    canvas.height = height * ratio;
    canvas.style.width = tl.width + 'px';
    canvas.style.height = height + 'px';
    const g = canvas.getContext('2d');
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, tl.width, height);
    g.font = '11px system-ui, sans-serif';
    drawTimeAxis(g, tl);
    drawStepRow(g, tl);
    drawLanes(g, tl);
    document.getElementById('timeline-range').textContent =
      'showing +' + duration(tl.view[0]) + ' to +' + duration(tl.view[1]) + ' of ' + duration(tl.w.span);
  }

  // Nine ticks across the view, each with its time and a grid line.
  function drawTimeAxis(g, tl) {
    g.fillStyle = '#5b6673';
    g.strokeStyle = '#e5e8ec';
    for (let i = 0; i <= 8; ++i) {
      const t = tl.view[0] + ((tl.view[1] - tl.view[0]) * i) / 8;
      const px = timelineX(tl, t);
      g.beginPath(); g.moveTo(px, AXIS_H - 4); g.lineTo(px, tl.height); g.stroke();
      g.fillText('+' + duration(t), Math.min(px + 2, tl.width - 60), 12);
    }
  }

  // The steps' row under the axis: alternate shades, a label where it fits.
  function drawStepRow(g, tl) {
    g.fillStyle = '#5b6673';
    g.fillText('steps', 6, AXIS_H + 11);
    tl.data.steps.forEach((st, i) => {
      const [, start, dur] = st;
      const a = Math.max(LABEL_W, timelineX(tl, start)), b = Math.min(tl.width - 8, timelineX(tl, start + dur));
      if (b <= a) return;
      g.fillStyle = i % 2 ? '#dfe6ee' : '#c9d5e2';
      g.fillRect(a, AXIS_H, b - a, STEP_H - 2);
      g.fillStyle = '#1d232b';
      if (b - a > 30) g.fillText(stepLabel(st), a + 3, AXIS_H + 11);
    });
  }

  // 'step 7', or 'steps 100-149' for a run of steps drawn as one span.
  function stepLabel([step, , , last]) {
    return last === undefined ? 'step ' + step : 'steps ' + step + '\u2013' + last;
  }

  // A lane per stream and host thread: its label, then each item in view,
  // at least a pixel wide.
  function drawLanes(g, tl) {
    const view = tl.view;
    tl.data.lanes.forEach((lane, li) => {
      const y = AXIS_H + STEP_H + li * LANE_H;
      g.fillStyle = li % 2 ? '#fafbfc' : '#f2f4f7';
      g.fillRect(0, y, tl.width, LANE_H);
      g.fillStyle = '#1d232b';
      g.fillText(lane.label.length > 32 ? lane.label.slice(0, 31) + '\u2026' : lane.label, 6, y + 14);
      const lo = lowerBound(lane.items, view[0] - tl.w.span);  // items may start before the view
      for (let i = Math.max(0, lo); i < lane.items.length; ++i) {
        const [start, dur, name] = lane.items[i];
        if (start > view[1]) break;
        if (start + dur < view[0]) continue;
        const a = Math.max(LABEL_W, timelineX(tl, start)), b = Math.min(tl.width - 8, timelineX(tl, start + dur));
        g.fillStyle = itemColor(tl.S[name], lane.kind);
        g.fillRect(a, y + 3, Math.max(1, b - a), LANE_H - 6);
      }
    });
  }

  // Scroll zooms at the pointer, a drag pans, a double click resets, and
  // hovering names what is under the pointer.
  function listenTimeline(tl) {
    const canvas = tl.canvas;
    canvas.addEventListener('wheel', (e) => {
      e.preventDefault();
      const p = timelinePoint(tl, e);
      if (p.px < LABEL_W) return;
      zoomTimeline(tl, e.deltaY > 0 ? 1.25 : 0.8, p.t);
    }, { passive: false });
    canvas.addEventListener('mousedown', (e) => { tl.drag = { x: e.clientX, view: tl.view.slice() }; canvas.style.cursor = 'grabbing'; });
    window.addEventListener('mouseup', () => { tl.drag = null; canvas.style.cursor = 'grab'; });
    canvas.addEventListener('dblclick', () => resetTimeline(tl));
    canvas.addEventListener('mouseleave', hideTip);
    canvas.addEventListener('mousemove', (e) => (tl.drag ? panTimeline(tl, e) : timelineTip(tl, e)));
    window.addEventListener('resize', () => drawTimeline(tl));
  }

  // The tooltip for the pointer: the step under it in the steps' row, or the
  // item under it in a lane; none elsewhere.
  function timelineTip(tl, event) {
    const p = timelinePoint(tl, event);
    if (p.py < AXIS_H + STEP_H && p.py >= AXIS_H) {
      const st = tl.data.steps.find(([, start, dur]) => p.t >= start && p.t < start + dur);
      if (st) return showTip(event, [[stepLabel(st), duration(st[2]) + ', at +' + duration(st[1])]]);
    }
    const lanes = tl.data.lanes;
    if (p.li < 0 || p.li >= lanes.length || p.px < LABEL_W) return hideTip();
    const item = itemAt(tl, lanes[p.li], p.t);
    if (!item) return hideTip();
    showTip(event, itemTip(tl, lanes[p.li], item));
  }

  // LANE's item at time T, give or take two pixels: of those, the last to start.
  function itemAt(tl, lane, t) {
    const slack = ((tl.view[1] - tl.view[0]) / (tl.width - LABEL_W)) * 2;  // two pixels
    let best = null;
    const lo = lowerBound(lane.items, t - tl.w.span);
    for (let i = Math.max(0, lo); i < lane.items.length; ++i) {
      const it = lane.items[i];
      if (it[0] > t + slack) break;
      if (it[0] + it[1] + slack >= t) best = it;
    }
    return best;
  }

  // An item's tooltip lines: name, duration (or the block it stands for), start, call site, lane.
  function itemTip(tl, lane, item) {
    const [start, dur, name, site, count] = item;
    const lines = [[tl.S[name], '']];
    if (count > 1) lines.push([count + ' items', 'drawn as one block (named after its longest), ' + duration(dur) + ' from first start to last end']);
    else lines.push(['duration', duration(dur)]);
    lines.push(['at', '+' + duration(start)]);
    lines.push(['call site', tl.S[site] || '(none recorded)']);
    lines.push(['lane', lane.label]);
    return lines;
  }

  // ---- sections: the tables, the call sites

  function tables(w) {
    const s = section('tables', 'GPU kernels, CUDA API and memory operations',
      'The summary\u2019s tables (the columns of nsys stats). Click a column to sort; hover a name for all of it.');
    s.append(el('h3', { text: 'GPU kernels (cuda_gpu_kern_sum)' }), timeTable('table-kernels', w.kernels, 'Instances', 'Name'));
    s.append(el('h3', { text: 'CUDA API (cuda_api_sum)' }), timeTable('table-api', w.api, 'Num Calls', 'Name'));
    s.append(el('h3', { text: 'Memory operations by time (cuda_gpu_mem_time_sum)' }), timeTable('table-mem-time', w.mem_time, 'Count', 'Operation'));
    s.append(el('h3', { text: 'Memory operations by size (cuda_gpu_mem_size_sum)' }));
    if (w.mem_size_from_host) s.append(el('p', { class: 'note', text: 'No GPU copy records: sizes from the host calls.' }));
    // Column lists, one entry per column as in every table of the page: data, not logic.
    s.append(dataTable('table-mem-size', [
      { title: 'Total (MB)', key: (r) => r.total, cell: (r) => Mb(r.total) },
      { title: 'Count', key: (r) => r.count, cell: (r) => U(r.count) },
      { title: 'Avg (MB)', key: (r) => r.avg, cell: (r) => Mb(r.avg) },
      { title: 'Med (MB)', key: (r) => r.med, cell: (r) => Mb(r.med) },
      { title: 'Min (MB)', key: (r) => r.min, cell: (r) => Mb(r.min) },
      { title: 'Max (MB)', key: (r) => r.max, cell: (r) => Mb(r.max) },
      { title: 'StdDev (MB)', key: (r) => r.stddev, cell: (r) => Mb(r.stddev) },
      { title: 'Operation', key: (r) => r.name, cell: (r) => r.name, cls: 'name' },
    ], w.mem_size));
    return s;
  }

  // The call sites' table and the flame graphs, one section.
  function flameGraph(w) {
    const s = section('python', 'GPU time by Python call site',
      'Each CUDA call is charged to the innermost frame of your own code on its Python stack (PROF_PYTHON_USER adds prefixes that count as yours); its GPU work to that call, and the work a CUDA graph replayed to the call that captured it (rows marked captured).');
    s.append(...callSites(w));
    const fg = {
      w,
      kind: 0,  // the index in FLAME_KINDS of the graph shown
      zoomPath: [],  // the child indices from the root to the node zoomed into
      controls: el('div', { class: 'controls' }),
      note: el('span', { class: 'note' }),
      box: el('div', { class: 'flame', id: 'flame' }),
    };
    addFlameControls(fg);
    s.append(el('h3', { text: 'Flame graph (icicle): click a box to zoom into it, click a box above it to zoom out' }), fg.controls, fg.box);
    requestAnimationFrame(() => drawFlame(fg));
    return s;
  }

  // GPU time by call site when the window has Python stacks; else why not.
  function callSites(w) {
    if (!w.meta.python) {
      return [el('p', { class: 'none', text: 'No Python stacks in this window (not a Python process, PROF_PYTHON=0, or a trace without python_function events): the flame graphs below start at the CUDA call.' })];
    }
    const parts = [];
    if (!w.meta.python.startsWith('on')) parts.push(el('p', { class: 'note', text: 'Python stacks ' + w.meta.python }));
    const total = w.call_sites.reduce((a, r) => a + r.gpu, 0);
    parts.push(dataTable('table-call-sites', [
      { title: 'GPU time (%)', key: (r) => r.gpu, cell: (r) => D(total ? (100 * r.gpu) / total : 0) },
      { title: 'GPU time (ns)', key: (r) => r.gpu, cell: (r) => String(r.gpu) },
      { title: 'Kernels', key: (r) => r.kernels, cell: (r) => String(r.kernels) },
      { title: 'Launches', key: (r) => r.launches, cell: (r) => String(r.launches) },
      { title: 'Syncs', key: (r) => r.syncs, cell: (r) => String(r.syncs) },
      { title: 'Copies', key: (r) => r.copies, cell: (r) => String(r.copies) },
      { title: 'Allocs/frees', key: (r) => r.allocs, cell: (r) => String(r.allocs) },
      { title: 'Calls', key: (r) => r.calls, cell: (r) => String(r.calls) },
      { title: 'Call site', key: (r) => r.site, cell: (r) => r.site, cls: 'name' },
    ], w.call_sites, { empty: '(no recorded calls)' }));
    return parts;
  }

  // ---- PyTorch's operators and module tree (the summary's two tables)

  function operators(w) {
    const s = section('operators', 'GPU time by PyTorch operator and module',
      'Each kernel, copy and memset belongs to the innermost operator (aten::mm, ...) around the call that launched it (self); total adds the operators it called. Modules: each nn.Module call by its attribute path, indented under the module that called it; backward work under its forward\u2019s module.');
    if (!w.operators.length) {
      s.append(el('p', { class: 'none', text: 'No PyTorch operators in this window (not a PyTorch process, PROF_TORCH_OPS=0, or a trace without cpu_op events).' }));
      return s;
    }
    const total = w.operator_gpu_total;
    const share = (ns) => D(total ? (100 * ns) / total : 0);
    s.append(el('h3', { text: 'Operators (as key_averages(), by self GPU time)' }), dataTable('table-operators', [
      { title: 'Self GPU (%)', key: (r) => r.self, cell: (r) => share(r.self) },
      { title: 'Self GPU time (ns)', key: (r) => r.self, cell: (r) => String(r.self) },
      { title: 'Total GPU time (ns)', key: (r) => r.total, cell: (r) => String(r.total) },
      { title: 'Kernels', key: (r) => r.kernels, cell: (r) => String(r.kernels) },
      { title: 'Calls', key: (r) => r.calls, cell: (r) => String(r.calls) },
      { title: 'CPU time (ns)', key: (r) => r.cpu, cell: (r) => String(r.cpu) },
      { title: 'Operator', key: (r) => r.name, cell: (r) => r.name, cls: 'name' },
    ], w.operators));
    if (w.operators_more) s.append(el('p', { class: 'note', text: w.operators_more + ' more operators, with less self GPU time' }));
    s.append(el('h3', { text: 'Module tree' }));
    if (!w.modules.length) {
      s.append(el('p', { class: 'none', text: 'No module paths recorded (PROF_TORCH_OPS=names, or a trace without nn.Module calls).' }));
      return s;
    }
    s.append(dataTable('table-modules', [
      { title: 'Total GPU (%)', key: (r) => r.total, cell: (r) => share(r.total) },
      { title: 'Total GPU time (ns)', key: (r) => r.total, cell: (r) => String(r.total) },
      { title: 'Self GPU time (ns)', key: (r) => r.self, cell: (r) => String(r.self) },
      { title: 'Kernels', key: (r) => r.kernels, cell: (r) => String(r.kernels) },
      { title: 'Module', key: (r) => r.path, cell: (r) => r.path, cls: 'name', indent: (r) => r.depth },
    ], w.modules));
    if (w.modules_more) s.append(el('p', { class: 'note', text: w.modules_more + ' more modules' }));
    return s;
  }

  // ---- the flame graphs: an icicle of w.flame's trees, zoomed by clicks

  // [key in w.flame, button, value format, what the graph shows]. A tree is
  // [name index (-1: the root), value, [children]].
  const FLAME_KINDS = [
    ['kernel', 'Kernel time', duration, 'kernel time by the stack that launched it; the kernel is the leaf'],
    ['sync', 'Synchronize time', duration, 'host time inside blocking synchronizes, by the stack that called them'],
    ['copy', 'Copy bytes', bytes, 'bytes copied or set, by the stack that queued them'],
  ];
  const FLAME_ROW_H = 18;  // CSS pixels

  // A button per graph, one to zoom back out, and the note on what is shown.
  function addFlameControls(fg) {
    FLAME_KINDS.forEach((k, i) => fg.controls.append(el('button', { 'data-kind': k[0], text: k[1], onclick: () => { fg.kind = i; fg.zoomPath = []; drawFlame(fg); } }), ' '));
    fg.controls.append(el('button', { text: 'reset zoom', onclick: () => { fg.zoomPath = []; drawFlame(fg); } }), ' ', fg.note);
  }

  // Draws the chosen graph: the node zoomed into across the full width, its
  // ancestors as full-width bars above it, its descendants below in proportion.
  function drawFlame(fg) {
    const [key, , format, what] = FLAME_KINDS[fg.kind];
    for (const b of fg.controls.querySelectorAll('button[data-kind]')) b.classList.toggle('on', b.dataset.kind === key);
    const root = fg.w.flame[key];
    const box = fg.box;
    box.replaceChildren();
    box.dataset.kind = key;
    box.dataset.total = String(root[1]);
    fg.note.textContent = what + '; total ' + format(root[1]) + '.';
    if (!root[1]) {
      box.style.height = '30px';
      box.append(el('div', { class: 'none', style: 'padding:6px', text: '(nothing recorded)' }));
      return;
    }
    const pass = { fg, root, format, maxDepth: 0 };
    const width = Math.max(400, box.clientWidth || 1000);
    const chain = [root];
    for (const i of fg.zoomPath) chain.push(chain[chain.length - 1][2][i]);
    chain.slice(0, -1).forEach((n, depth) => addFlameNode(pass, n, depth, 0, width, fg.zoomPath.slice(0, depth), true));
    addFlameNode(pass, chain[chain.length - 1], chain.length - 1, 0, width, fg.zoomPath, false);
    box.style.height = (pass.maxDepth + 1) * FLAME_ROW_H + 2 + 'px';
  }

  // NODE's box at DEPTH, X0 and WPX pixels wide, and (unless it is an
  // ANCESTOR of the node zoomed into) its children's under it. PATH leads
  // from the root to NODE; a click zooms there.
  function addFlameNode(pass, node, depth, x0, wpx, path, ancestor) {
    const fg = pass.fg;
    pass.maxDepth = Math.max(pass.maxDepth, depth);
    const children = node[2];
    const self = node[1] - children.reduce((a, c) => a + c[1], 0);
    const d = el('div', { class: 'node' + (ancestor ? ' ancestor' : ''), 'data-self': String(ancestor ? 0 : self), 'data-value': String(node[1]), 'data-leaf': children.length ? '0' : '1' });
    d.style.left = x0 + 'px';
    d.style.top = depth * FLAME_ROW_H + 'px';
    d.style.width = Math.max(wpx, 0.5) + 'px';
    const name = node[0] < 0 ? 'all' : fg.w.strings[node[0]];
    d.style.background = flameColor(node, name);
    if (wpx > 24) d.textContent = name;
    d.addEventListener('mousemove', (e) => showTip(e, [[name, ''], [pass.format(node[1]), '(' + D((100 * node[1]) / pass.root[1]) + '% of all' + (self > 0 && children.length ? '; ' + pass.format(self) + ' in itself' : '') + ')']]));
    d.addEventListener('mouseleave', hideTip);
    d.addEventListener('click', (e) => { e.stopPropagation(); fg.zoomPath = path; drawFlame(fg); });
    fg.box.append(d);
    if (ancestor) return;
    let x = x0;
    children.forEach((c, i) => {
      const cw = (wpx * c[1]) / node[1];
      addFlameNode(pass, c, depth + 1, x, cw, path.concat([i]), false);
      x += cw;
    });
  }

  // The root grey-blue, frames warm, leaves (kernels, calls) cool; the shade by name.
  function flameColor(node, name) {
    if (node[0] < 0) return '#c9d5e2';
    if (node[2].length) return 'hsl(' + (20 + (hue(name) % 40)) + ',75%,' + (68 + (hue(name) % 12)) + '%)';
    return 'hsl(' + (200 + (hue(name) % 40)) + ',60%,72%)';
  }

  // ---- sections: memory

  // PyTorch's tensors per device (the summary's "Tensor memory"): the peak,
  // each step's, and what is live at the peak.
  function tensorMemory(s, w) {
    if (w.tensor_status && w.tensor_status !== 'on') s.append(el('p', { class: 'note', text: "PyTorch's tensor memory: " + w.tensor_status }));
    for (const t of w.tensor_memory || []) {
      s.append(el('h3', { text: "PyTorch's tensors on GPU " + t.device }));
      const steps = t.step_peaks.map(([k, b]) => 'step ' + k + ' ' + bytes(b)).join(', ');
      s.append(el('p', { class: 'note', text: 'Peak ' + bytes(t.peak) + (t.peak_step >= 0 ? ' in step ' + t.peak_step : '') + ', ' + Ms(t.peak_ns) + ' ms into the window, ' + bytes(t.reserved_at_peak) + ' reserved then; ' + bytes(t.start) + ' at the start, ' + bytes(t.end) + ' at the end; ' + U(t.allocs) + ' allocations, ' + U(t.frees) + ' frees.' + (steps ? ' Peak by step: ' + steps + '.' : '') }));
      s.append(dataTable('table-tensor-lines-' + t.device, [
        { title: 'Bytes', key: (r) => r.bytes, cell: (r) => U(r.bytes) },
        { title: 'Size', key: (r) => r.bytes, cell: (r) => bytes(r.bytes) },
        { title: 'Blocks', key: (r) => r.blocks, cell: (r) => (r.blocks ? U(r.blocks) : '-') },
        { title: 'Live at the peak, by Python line', key: (r) => r.site, cell: (r) => r.site, cls: 'name' },
      ], t.lines));
      if (t.modules.length) {
        s.append(dataTable('table-tensor-modules-' + t.device, [
          { title: 'Bytes', key: (r) => r.bytes, cell: (r) => U(r.bytes) },
          { title: 'Size', key: (r) => r.bytes, cell: (r) => bytes(r.bytes) },
          { title: 'Blocks', key: (r) => r.blocks, cell: (r) => U(r.blocks) },
          { title: 'Live at the peak, by module (allocated in the window)', key: (r) => r.path, cell: (r) => r.path, cls: 'name' },
        ], t.modules));
      }
      if (t.largest.length) {
        s.append(dataTable('table-tensor-largest-' + t.device, [
          { title: 'Bytes', key: (r) => r.bytes, cell: (r) => U(r.bytes) },
          { title: 'Size', key: (r) => r.bytes, cell: (r) => bytes(r.bytes) },
          { title: 'Allocated (ms)', key: (r) => r.alloc_ns, cell: (r) => Ms(r.alloc_ns) },
          { title: 'Largest blocks live at the peak, allocated in the window', key: (r) => r.site, cell: (r) => r.site, cls: 'name' },
        ], t.largest));
      }
    }
  }

  function memory(w) {
    const s = section('memory', 'Memory', 'Allocator calls in the window: live bytes over time (the highest of each short stretch, so peaks show; in a PyTorch process its tensors too), the peak, and what was still allocated when the window ended.');
    s.append(dataTable('table-memory', [
      { title: 'Device', key: (r) => r.device, cell: (r) => deviceName(r.device) },
      { title: 'Kind', key: (r) => memKind(r.kind), cell: (r) => memKind(r.kind), cls: 'text' },
      { title: 'Allocs', key: (r) => r.allocs, cell: (r) => U(r.allocs) },
      { title: 'Frees', key: (r) => r.frees, cell: (r) => U(r.frees) },
      { title: 'Allocated (B)', key: (r) => r.allocated, cell: (r) => U(r.allocated) },
      { title: 'Freed (B)', key: (r) => r.freed, cell: (r) => U(r.freed) },
      { title: 'Peak live (B)', key: (r) => r.peak, cell: (r) => U(r.peak) },
      { title: 'Peak live', key: (r) => r.peak, cell: (r) => bytes(r.peak) },
    ], w.memory, { empty: '(no allocations or frees in the window' + (w.live_count ? '; what was allocated before it and still is at its end is listed below)' : ')') }));
    if (w.memory_series.length) {
      const width = 900, height = 200, left = 80, bottom = 24, top = 10;
      const max = Math.max(1, ...w.memory_series.flatMap((m) => m.points.map((p) => p[1])));
      const chart = svg('svg', { class: 'chart', width, height });
      const px = (t) => left + (t / Math.max(1, w.span)) * (width - left - 10);
      const py = (b) => top + (height - top - bottom) * (1 - b / max);
      for (let i = 0; i <= 4; ++i) {
        chart.append(svg('line', { x1: left, x2: width - 10, y1: py((max * i) / 4), y2: py((max * i) / 4), stroke: '#e5e8ec' }));
        chart.append(svg('text', { x: left - 6, y: py((max * i) / 4) + 4, 'text-anchor': 'end' }, bytes((max * i) / 4)));
      }
      chart.append(svg('text', { x: width - 10, y: height - 6, 'text-anchor': 'end' }, '+' + duration(w.span)));
      chart.append(svg('text', { x: left, y: height - 6 }, '+0'));
      const colors = ['#2f6fb3', '#c78b2c', '#2c9c8f', '#8e5bb5', '#d0453b'];
      const items = [];
      w.memory_series.forEach((m, i) => {
        let d = '';
        let last = null;
        for (const [t, b] of m.points) {
          d += (last === null ? 'M' : 'H' + px(t) + 'V') + (last === null ? px(t) + ',' + py(b) : py(b));
          last = b;
        }
        d += 'H' + px(w.span);
        const color = colors[i % colors.length];
        chart.append(svg('path', { d, fill: 'none', stroke: color, 'stroke-width': 1.5 }));
        items.push(['device ' + deviceName(m.device) + ' ' + memKind(m.kind), color]);
      });
      s.append(el('h3', { text: 'Live bytes over the window' }), legend(items), chart);
    }
    tensorMemory(s, w);
    s.append(el('h3', { text: 'Still allocated at the end of the window' }));
    if (!w.live_count) {
      s.append(el('p', { class: 'none', text: '(nothing recorded as still allocated)' }));
    } else {
      s.append(el('p', { class: 'note', text: w.live_count + ' allocations, ' + bytes(w.live_bytes) + ' (largest first' + (w.live_count > w.live.length ? ', the first ' + w.live.length + ' shown' : '') + ').' }));
      const columns = [
        { title: 'Bytes', key: (r) => r.bytes, cell: (r) => U(r.bytes) },
        { title: 'Device', key: (r) => r.device, cell: (r) => deviceName(r.device) },
        { title: 'Kind', key: (r) => memKind(r.kind), cell: (r) => memKind(r.kind), cls: 'text' },
        { title: 'API', key: (r) => r.api, cell: (r) => r.api, cls: 'text' },
      ];
      // The call site only where one is known (Python stacks on), as in the summary.
      if (w.live.some((r) => r.site)) columns.push({ title: 'Call site', key: (r) => r.site, cell: (r) => r.site || '-', cls: 'name' });
      s.append(dataTable('table-live', columns, w.live));
    }
    return s;
  }

  // ---- the merged job (prof merge's job summary)

  function jobView(job) {
    const s = section('job', 'Job: ' + job.labels.length + ' ranks',
      'prof merge\u2019s job summary: the ranks\u2019 clocks aligned on their collectives, each step of each rank, what each rank cost the others by arriving last at collectives, and the straggler with its evidence.');
    s.append(jobStraggler(job));
    s.append(el('h3', { text: 'Step time per rank (ms)' }));
    s.append(el('p', { class: 'note', text: 'Colour: how much longer than the median step of all ranks (white: the median or less; darkest: 50 % longer or more). Hover a cell for its breakdown.' }));
    s.append(el('div', { class: 'scroll' }, jobHeatMap(job)));
    s.append(el('h3', { text: 'Compute, communication and waiting per rank (mean per step)' }));
    s.append(legend(JOB_PARTS));
    s.append(jobRankBars(job));
    s.append(jobRankTable(job));
    s.append(el('h3', { text: 'The job summary, as prof merge wrote it' }));
    s.append(el('pre', { class: 'header', id: 'job-summary', text: job.text }));
    s.append(el('p', { class: 'note', text: 'Each rank\u2019s own window follows; the tabs at the top choose the rank.' }));
    return s;
  }

  // The straggler (a finding) or that there is none, with the evidence.
  function jobStraggler(job) {
    const straggler = el('div', { class: job.straggler >= 0 ? 'finding' : 'card', id: 'job-straggler' });
    straggler.append(el('div', { class: 'title', text: job.straggler_line }));
    for (const line of job.evidence) straggler.append(el('div', { class: 'evidence', text: line }));
    return straggler;
  }

  // Heat map: a row per rank, a column per step, each cell its step time.
  function jobHeatMap(job) {
    const all = job.cells.flatMap((row) => row.filter((c) => c).map((c) => c[0])).sort((a, b) => a - b);
    const median = all.length ? (all[(all.length - 1) >> 1] + all[all.length >> 1]) / 2 : 0;
    const table = el('table', { class: 'data heat', id: 'job-heatmap' });
    const head = el('tr', {}, el('th', { class: 'text', text: 'Rank' }));
    job.steps.forEach((n) => head.append(el('th', { text: (job.by_number ? '' : '#') + n })));
    table.append(el('thead', {}, head));
    const body = el('tbody');
    job.labels.forEach((label, i) => {
      const tr = el('tr', {}, el('td', { class: 'text', text: String(job.totals[i].rank) }));
      job.cells.forEach((row, r) => tr.append(heatCell(row[i], label + ', step ' + job.steps[r], median)));
      body.append(tr);
    });
    table.append(body);
    return table;
  }

  // One rank's step, C = [step, compute, communication, waiting, host gap,
  // syncs, others' wait] in ns (null: the rank has no such step), shaded by
  // how far it is over the MEDIAN step.
  function heatCell(c, title, median) {
    const td = el('td', { text: c ? Ms(c[0]) : '' });
    if (!c) return td;
    const t = median > 0 ? Math.min(1, Math.max(0, (c[0] / median - 1) / 0.5)) : 0;
    td.style.background = 'hsl(12,80%,' + (95 - 45 * t) + '%)';
    if (t > 0.6) td.style.color = '#fff';
    td.addEventListener('mousemove', (e) => showTip(e, [[title, ''],
      ['step', Ms(c[0]) + ' ms'], ['compute', Ms(c[1]) + ' ms'], ['communication', Ms(c[2]) + ' ms'],
      ['waiting for the last rank', Ms(c[3]) + ' ms'], ['longest host gap', Ms(c[4]) + ' ms'],
      ['others waited for it', Ms(c[6]) + ' ms']]));
    td.addEventListener('mouseleave', hideTip);
    return td;
  }

  // Communication against compute, per rank (means per step).
  const JOB_PARTS = [['Compute', '#2f6fb3'], ['Communication, not waiting', '#8e5bb5'], ['Waiting for the last rank', '#d0453b']];

  // A horizontal bar per rank split into JOB_PARTS, with a tick at its mean step time.
  function jobRankBars(job) {
    const width = 760, barH = 18, left = 80;
    const max = Math.max(1, ...job.totals.map((t) => Math.max(t.step, t.compute + t.comm)));
    const scale = (v) => ((width - left - 10) * v) / max;
    const chart = svg('svg', { class: 'chart', width, height: job.totals.length * (barH + 6) + 24 });
    job.totals.forEach((t, i) => {
      const y = 4 + i * (barH + 6);
      chart.append(svg('text', { x: left - 6, y: y + 13, 'text-anchor': 'end' }, 'rank ' + t.rank));
      let x = left;
      [t.compute, Math.max(0, t.comm - t.wait), t.wait].forEach((v, c) => {
        const w = scale(v);
        const rect = svg('rect', { x, y, width: Math.max(w, 0), height: barH, fill: JOB_PARTS[c][1] });
        rect.addEventListener('mousemove', (e) => showTip(e, [['rank ' + t.rank, ''], [JOB_PARTS[c][0] + ':', Ms(v) + ' ms per step'], ['step time', Ms(t.step) + ' ms']]));
        rect.addEventListener('mouseleave', hideTip);
        chart.append(rect);
        x += w;
      });
      chart.append(svg('line', { x1: left + scale(t.step), x2: left + scale(t.step), y1: y - 2, y2: y + barH + 2, stroke: '#1d232b', 'stroke-width': 2 }));
    });
    chart.append(svg('text', { x: left, y: job.totals.length * (barH + 6) + 18 }, 'the black tick: the mean step time'));
    return chart;
  }

  function jobRankTable(job) {
    return dataTable('table-job-ranks', [
      { title: 'Rank', key: (t) => t.rank, cell: (t) => String(t.rank) },
      { title: 'Step time', key: (t) => t.step, cell: (t) => Ms(t.step) },
      { title: 'Compute', key: (t) => t.compute, cell: (t) => Ms(t.compute) },
      { title: 'Communication', key: (t) => t.comm, cell: (t) => Ms(t.comm) },
      { title: 'Waiting', key: (t) => t.wait, cell: (t) => Ms(t.wait) },
      { title: 'Host gap', key: (t) => t.gap, cell: (t) => Ms(t.gap) },
      { title: 'Arrived last', key: (t) => t.arrived_last, cell: (t) => U(t.arrived_last) },
      { title: 'Others waited for it', key: (t) => t.cost_per_rank_step, cell: (t) => Ms(t.cost_per_rank_step) },
      { title: 'Comm overlapped (%)', key: (t) => t.overlap, cell: (t) => (t.overlap < 0 ? '-' : D(t.overlap)) },
    ], job.totals);
  }

  // ---- the page

  const main = el('main');
  const header = el('header', { class: 'top' });
  header.append(el('h1', { text: DATA.title }));
  const nav = el('nav');
  for (const [id, text] of [['job', 'Job'], ['overview', 'Overview'], ['steps', 'Step time'], ['idle', 'GPU idle'], ['timeline', 'Timeline'], ['tables', 'Kernels & API'], ['python', 'Call sites & flame graph'], ['operators', 'Operators'], ['memory', 'Memory']]) {
    if (id === 'job' && !DATA.job) continue;
    nav.append(el('a', { href: '#' + id, text }));
  }
  header.append(nav);
  const tabs = el('div', { class: 'tabs' });
  if (DATA.windows.length > 1) header.append(tabs);
  document.body.append(header, main, tooltip);

  function showWindow(i) {
    const w = DATA.windows[i];
    for (const [j, b] of Array.from(tabs.children).entries()) b.classList.toggle('on', j === i);
    const parts = [];
    if (DATA.job) parts.push(jobView(DATA.job));
    parts.push(overview(w), stepBreakdown(w), idleBreakdown(w), timeline(w), tables(w), flameGraph(w), operators(w), memory(w));
    main.replaceChildren(...parts);
  }
  DATA.windows.forEach((w, i) => tabs.append(el('button', { text: w.label, onclick: () => showWindow(i) })));
  if (DATA.windows.length) showWindow(0);
  else main.append(el('p', { class: 'none', text: 'No window in this input.' }));
})();
