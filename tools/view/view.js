/* dao view: draws a libdao trace or snapshot embedded in this page as JSON
   (element #dao-data, written by tools/dao_view.c). Canvas only: one path
   per band, never one DOM node per event. The page reports its state for
   tests on <body>: data-ready="1" when drawn, data-errors (count of
   JavaScript errors, their text in #errors), data-bands, data-columns,
   data-segments, data-blocks, data-rows, data-load-ms. */
(function () {
  'use strict';
  var body = document.body;
  var errors = [];
  function reportError(text) {
    errors.push(text);
    document.getElementById('errors').textContent = errors.join('\n');
    body.setAttribute('data-errors', String(errors.length));
  }
  window.onerror = function (msg, src, line, col) {
    reportError('error: ' + msg + ' (line ' + line + ':' + col + ')');
    return false;
  };
  window.addEventListener('unhandledrejection', function (e) { reportError('unhandled: ' + e.reason); });

  var MAX_BANDS_BY_BYTE_TIME = 300, MAX_BANDS_AT_PEAK = 100, MAX_SEGMENT_ROWS = 400, TABLE_ROWS = 15;
  var tip = document.getElementById('tip');

  function fmtBytes(b) {
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'], i = 0, v = Math.abs(b);
    while (v >= 1024 && i < u.length - 1) { v /= 1024; ++i; }
    return (b < 0 ? '-' : '') + (i === 0 ? v.toFixed(0) : v.toFixed(v < 10 ? 2 : 1)) + ' ' + u[i];
  }
  function hex(a) { return '0x' + Math.round(a).toString(16); }
  function color(i) {
    var h = (i * 137.508) % 360;
    return 'hsl(' + h.toFixed(0) + ',62%,' + (50 + (i * 7) % 20) + '%)';
  }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function showTip(ev, text) {
    tip.textContent = text;
    tip.style.display = 'block';
    var x = ev.clientX + 14, y = ev.clientY + 14;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    if (x + w > window.innerWidth) x = Math.max(0, ev.clientX - w - 14);
    if (y + h > window.innerHeight) y = Math.max(0, ev.clientY - h - 14);
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  }
  function hideTip() { tip.style.display = 'none'; }
  function setupCanvas(canvas, cssHeight) {
    var ratio = window.devicePixelRatio || 1;
    var w = Math.max(200, canvas.parentNode.clientWidth || 800);
    canvas.style.height = cssHeight + 'px';
    canvas.width = Math.round(w * ratio);
    canvas.height = Math.round(cssHeight * ratio);
    var ctx = canvas.getContext('2d');
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    return { ctx: ctx, w: w, h: cssHeight };
  }
  function undelta(a) {
    var out = new Float64Array(a.length), acc = 0;
    for (var i = 0; i < a.length; ++i) { acc += a[i]; out[i] = acc; }
    return out;
  }
  function column(a, n, dflt) {
    if (!a) { var z = new Float64Array(n); if (dflt) z.fill(dflt); return z; }
    return Float64Array.from(a);
  }

  /* ---- segments and blocks: shared by traces and snapshots ------------- */
  /* segs: [{label, addr, size, blocks: [{addr, size, color, info}]}] */
  function drawSegments(segs, note) {
    var canvas = document.getElementById('segments');
    var shown = segs.slice(0, MAX_SEGMENT_ROWS);
    var rowH = 14, gap = 3, labelW = 150;
    var cv = setupCanvas(canvas, Math.max(40, shown.length * (rowH + gap) + 8));
    var ctx = cv.ctx, maxSize = 1, nblocks = 0, i, j;
    for (i = 0; i < shown.length; ++i) maxSize = Math.max(maxSize, shown[i].size);
    var avail = cv.w - labelW - 8;
    ctx.clearRect(0, 0, cv.w, cv.h);
    ctx.font = '11px sans-serif';
    ctx.textBaseline = 'middle';
    var hit = [];
    for (i = 0; i < shown.length; ++i) {
      var s = shown[i], y = 4 + i * (rowH + gap);
      var sw = Math.max(2, avail * s.size / maxSize);
      ctx.fillStyle = '#555';
      ctx.fillText(s.label, 2, y + rowH / 2, labelW - 6);
      ctx.fillStyle = '#e6e6e6';
      ctx.fillRect(labelW, y, sw, rowH);
      for (j = 0; j < s.blocks.length; ++j) {
        var b = s.blocks[j];
        var x0 = labelW + sw * (b.addr - s.addr) / s.size;
        var bw = Math.max(1, sw * b.size / s.size);
        ctx.fillStyle = b.color;
        ctx.fillRect(x0, y, bw, rowH);
        hit.push([x0, y, bw, b.info]);
        ++nblocks;
      }
      ctx.strokeStyle = '#999';
      ctx.strokeRect(labelW + 0.5, y + 0.5, sw - 1, rowH - 1);
    }
    var extra = segs.length - shown.length;
    document.getElementById('segments-note').textContent =
        (note || '') + (extra > 0 ? ' ' + extra + ' more segments are not drawn.' : '');
    body.setAttribute('data-segments', String(shown.length));
    body.setAttribute('data-blocks', String(nblocks));
    canvas.onmousemove = function (ev) {
      var r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
      for (var k = hit.length - 1; k >= 0; --k) {
        var h = hit[k];
        if (x >= h[0] - 0.5 && x <= h[0] + h[2] + 0.5 && y >= h[1] && y <= h[1] + rowH) { showTip(ev, h[3]); return; }
      }
      var row = Math.floor((y - 4) / (rowH + gap));
      if (row >= 0 && row < shown.length) showTip(ev, shown[row].info || shown[row].label);
      else hideTip();
    };
    canvas.onmouseleave = hideTip;
  }

  function fillTable(rows) {
    var tbody = document.querySelector('#largest tbody');
    while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
    for (var i = 0; i < rows.length; ++i) {
      var r = rows[i], tr = el('tr');
      tr.appendChild(el('td', String(i + 1), 'num'));
      tr.appendChild(el('td', fmtBytes(r.size), 'num'));
      tr.appendChild(el('td', r.req === undefined ? '' : fmtBytes(r.req), 'num'));
      tr.appendChild(el('td', hex(r.addr)));
      tr.appendChild(el('td', String(r.stream)));
      tr.appendChild(el('td', r.from === undefined ? '' : String(r.from), 'num'));
      tr.appendChild(el('td', r.to === undefined ? '' : r.to, 'num'));
      var w = el('td', r.where || '', 'where');
      w.title = r.whereAll || '';
      tr.appendChild(w);
      tbody.appendChild(tr);
    }
    body.setAttribute('data-rows', String(rows.length));
  }

  function legend(items) {
    var l = document.getElementById('legend');
    l.textContent = '';
    items.forEach(function (it) {
      var s = el('span'), i = el('i');
      i.style.background = it[0];
      s.appendChild(i);
      s.appendChild(document.createTextNode(it[1]));
      l.appendChild(s);
    });
  }

  /* ---- a snapshot ------------------------------------------------------- */
  function initSnapshot(D) {
    var snap = D.snapshot, segsIn = snap.segments || [];
    document.getElementById('timeline-section').style.display = 'none';
    var reserved = 0, allocated = 0, nalloc = 0, all = [];
    var stateColor = { allocated: '#3b7dd8', pending_free: '#e39b2d', free: '#e6e6e6' };
    var segs = segsIn.map(function (s, i) {
      reserved += s.size;
      return {
        label: 'seg ' + i + ' ' + fmtBytes(s.size), addr: s.address, size: s.size,
        info: 'segment ' + hex(s.address) + '\nsize ' + fmtBytes(s.size) + '\npool ' + s.pool +
            (s.expandable ? ' (expandable, ' + fmtBytes(s.mapped_bytes) + ' mapped)' : '') + '\nstream ' + s.stream,
        blocks: (s.blocks || []).filter(function (b) { return b.state !== 'free'; }).map(function (b) {
          if (b.state === 'allocated') { allocated += b.size; ++nalloc; all.push(b); }
          return {
            addr: b.address, size: b.size, color: stateColor[b.state] || '#888',
            info: b.state + ' block ' + hex(b.address) + '\nsize ' + fmtBytes(b.size) + ' (requested ' +
                fmtBytes(b.requested_size) + ')\nstream ' + b.stream
          };
        })
      };
    });
    var sum = document.getElementById('summary');
    sum.innerHTML = '';
    sum.appendChild(document.createTextNode('snapshot of a ' + snap.strategy + ' allocator on ' + snap.place +
        ': ' + segs.length + ' segments, ' + fmtBytes(reserved) + ' reserved, ' + fmtBytes(allocated) +
        ' allocated in ' + nalloc + ' blocks' + (snap.config ? '; config ' + snap.config : '')));
    legend([[stateColor.allocated, 'allocated'], [stateColor.pending_free, 'freed, waiting for its streams'],
            [stateColor.free, 'free (cached)']]);
    document.getElementById('moment-title').textContent = 'Segments and blocks';
    drawSegments(segs, '');
    all.sort(function (a, b) { return b.size - a.size; });
    document.getElementById('largest-title').textContent = 'Largest allocations';
    fillTable(all.slice(0, TABLE_ROWS).map(function (b) {
      return { size: b.size, req: b.requested_size, addr: b.address, stream: b.stream };
    }));
    body.setAttribute('data-bands', '0');
  }

  /* ---- a trace ---------------------------------------------------------- */
  function initTrace(D) {
    var A = D.A, n = A.t0.length, N = Math.max(1, D.n), i, k;
    var start = undelta(A.t0), dur = A.d, size = Float64Array.from(A.sz), addr = undelta(A.ad);
    var req = A.rq ? Float64Array.from(A.rq) : size;
    var stream = column(A.s, n, 0), stack = column(A.st, n, -1), alloc = column(A.a, n, 0);
    var end = new Float64Array(n);
    for (i = 0; i < n; ++i) end[i] = start[i] + dur[i];
    /* live bytes after each event */
    var total = new Float64Array(N + 1);
    for (i = 0; i < n; ++i) { total[start[i]] += size[i]; total[end[i]] -= size[i]; }
    var peak = 0, peakAt = 0, acc = 0;
    for (k = 0; k < N; ++k) { acc += total[k]; total[k] = acc; if (acc > peak) { peak = acc; peakAt = k; } }
    var stacks = D.stacks || {}, streams = D.streams || {};
    function where(i, all) {
      var f = stacks[stack[i]];
      if (!f || !f.length) return '';
      return all ? f.join('\n') : f[0];
    }
    function allocInfo(i) {
      var s = fmtBytes(size[i]) + (req[i] !== size[i] ? ' (requested ' + fmtBytes(req[i]) + ')' : '') +
          '\naddress ' + hex(addr[i]) + ', allocator ' + alloc[i] + ', stream ' + stream[i] +
          (streams[stream[i]] ? ' (' + streams[stream[i]] + ')' : '') +
          '\nallocated at event ' + start[i] + ', ' + (end[i] >= N ? 'never freed' : 'freed at event ' + end[i]);
      var w = where(i, true);
      return w ? s + '\n' + w.split('\n').slice(0, 16).join('\n') : s;
    }

    /* summary */
    var capacity = 0;
    (D.allocators || []).forEach(function (a) { capacity = Math.max(capacity, a.capacity || 0); });
    var sum = document.getElementById('summary');
    var parts = [D.source + ' trace: ' + N + ' events, ' + n + ' allocations; peak ' + fmtBytes(peak) +
                 ' live at event ' + peakAt];
    if (capacity) parts.push('capacity ' + fmtBytes(capacity));
    if (D.oom && D.oom.length) parts.push(D.oom.length + ' out-of-memory event' + (D.oom.length > 1 ? 's' : '') + ' (red lines)');
    if (D.unmatched) parts.push(D.unmatched + ' frees of nothing live skipped');
    if (D.truncated) parts.push('the last line was incomplete (ignored)');
    sum.textContent = parts.join('; ');

    /* bands: the top allocations by byte-time, and the largest live at the peak */
    var isBand = new Uint8Array(n), bands = [];
    function pickTop(score, count, filter) {
      var idx = [], j;
      for (j = 0; j < n; ++j) if (!isBand[j] && (!filter || filter(j))) idx.push(j);
      if (idx.length > count) {
        var vals = new Float64Array(idx.length);
        for (j = 0; j < idx.length; ++j) vals[j] = score(idx[j]);
        var sorted = Float64Array.from(vals).sort();
        var thr = sorted[sorted.length - count];
        var out = [];
        for (j = 0; j < idx.length && out.length < count; ++j) if (vals[j] > thr) out.push(idx[j]);
        for (j = 0; j < idx.length && out.length < count; ++j) if (vals[j] === thr) out.push(idx[j]);
        idx = out;
      }
      for (j = 0; j < idx.length; ++j) { isBand[idx[j]] = 1; bands.push(idx[j]); }
    }
    pickTop(function (j) { return size[j] * (Math.min(end[j], N) - start[j]); }, MAX_BANDS_BY_BYTE_TIME);
    pickTop(function (j) { return size[j]; }, MAX_BANDS_AT_PEAK,
            function (j) { return start[j] <= peakAt && peakAt < end[j]; });
    bands.sort(function (a, b) { return start[a] - start[b] || a - b; });
    var bandColor = {};
    bands.forEach(function (b, j) { bandColor[b] = color(j); });

    var canvas = document.getElementById('timeline');
    var moment = peakAt;
    var cols, sample, other, y0, maxY, cv;

    function layout() {
      cv = setupCanvas(canvas, 320);
      cols = Math.max(1, Math.min(Math.floor(cv.w), N));
      sample = new Float64Array(cols);
      other = new Float64Array(cols);
      var c, b, j;
      for (c = 0; c < cols; ++c) {
        var lo = Math.floor(c * N / cols), hi = Math.max(lo + 1, Math.floor((c + 1) * N / cols)), best = lo;
        for (k = lo; k < hi; ++k) if (total[k] > total[best]) best = k;
        sample[c] = best;
      }
      /* y0[b * cols + c]: the band's bottom at column c, NaN where not live */
      y0 = new Float64Array(bands.length * cols).fill(NaN);
      var bandSum = new Float64Array(cols);
      for (j = 0; j < bands.length; ++j) {
        b = bands[j];
        var c0 = Math.floor(start[b] * cols / N);
        for (c = Math.max(0, c0 - 1); c < cols; ++c) {
          var s = sample[c];
          if (s < start[b]) continue;
          if (s >= end[b]) break;
          bandSum[c] += size[b];
        }
      }
      for (c = 0; c < cols; ++c) other[c] = Math.max(0, total[sample[c]] - bandSum[c]);
      var cum = Float64Array.from(other);
      for (j = 0; j < bands.length; ++j) {
        b = bands[j];
        var c1 = Math.floor(start[b] * cols / N);
        for (c = Math.max(0, c1 - 1); c < cols; ++c) {
          var t = sample[c];
          if (t < start[b]) continue;
          if (t >= end[b]) break;
          y0[j * cols + c] = cum[c];
          cum[c] += size[b];
        }
      }
      maxY = Math.max(peak, capacity && capacity < peak * 1.5 ? capacity : 0) * 1.05 || 1;
    }

    function draw() {
      var ctx = cv.ctx, H = cv.h, W = cv.w, c, j, drawn = 0;
      var xs = W / cols;
      ctx.clearRect(0, 0, W, H);
      function Y(v) { return H - v / maxY * H; }
      ctx.fillStyle = '#c8c8c8';
      ctx.beginPath();
      ctx.moveTo(0, H);
      for (c = 0; c < cols; ++c) { ctx.lineTo(c * xs, Y(other[c])); ctx.lineTo((c + 1) * xs, Y(other[c])); }
      ctx.lineTo(W, H);
      ctx.closePath();
      ctx.fill();
      for (j = 0; j < bands.length; ++j) {
        var b = bands[j], base = j * cols, sz = size[b];
        ctx.fillStyle = bandColor[b];
        c = 0;
        var any = false;
        while (c < cols) {
          while (c < cols && isNaN(y0[base + c])) ++c;
          if (c >= cols) break;
          var from = c;
          while (c < cols && !isNaN(y0[base + c])) ++c;
          ctx.beginPath();
          ctx.moveTo(from * xs, Y(y0[base + from] + sz));
          for (var q = from; q < c; ++q) { ctx.lineTo(q * xs, Y(y0[base + q] + sz)); ctx.lineTo((q + 1) * xs, Y(y0[base + q] + sz)); }
          for (q = c - 1; q >= from; --q) { ctx.lineTo((q + 1) * xs, Y(y0[base + q])); ctx.lineTo(q * xs, Y(y0[base + q])); }
          ctx.closePath();
          ctx.fill();
          any = true;
        }
        if (any) ++drawn;
      }
      if (capacity && capacity <= maxY) {
        ctx.strokeStyle = '#333';
        ctx.setLineDash([4, 4]);
        ctx.beginPath(); ctx.moveTo(0, Y(capacity)); ctx.lineTo(W, Y(capacity)); ctx.stroke();
        ctx.setLineDash([]);
      }
      ctx.strokeStyle = '#d00';
      (D.oom || []).forEach(function (o) {
        var x = o[0] / N * W;
        ctx.beginPath(); ctx.moveTo(x, 0); ctx.lineTo(x, H); ctx.stroke();
      });
      var mx = (Math.floor(moment * cols / N) + 0.5) * xs;
      ctx.strokeStyle = '#000';
      ctx.beginPath(); ctx.moveTo(mx, 0); ctx.lineTo(mx, H); ctx.stroke();
      ctx.fillStyle = '#333';
      ctx.font = '11px sans-serif';
      ctx.fillText(fmtBytes(maxY / 1.05), 4, 12);
      body.setAttribute('data-bands', String(drawn));
      body.setAttribute('data-columns', String(cols));
    }

    function columnAt(ev) {
      var r = canvas.getBoundingClientRect();
      return { c: Math.max(0, Math.min(cols - 1, Math.floor((ev.clientX - r.left) / r.width * cols))),
               v: (1 - (ev.clientY - r.top) / r.height) * maxY };
    }
    canvas.onmousemove = function (ev) {
      var p = columnAt(ev), c = p.c, s = sample[c];
      if (p.v < 0 || p.v > total[s]) { showTip(ev, 'event ' + s + ': ' + fmtBytes(total[s]) + ' live'); return; }
      if (p.v < other[c]) {
        showTip(ev, 'event ' + s + ': ' + fmtBytes(total[s]) + ' live\n' + fmtBytes(other[c]) +
                ' in smaller allocations (grey; click to see them as blocks)');
        return;
      }
      for (var j = 0; j < bands.length; ++j) {
        var y = y0[j * cols + c];
        if (!isNaN(y) && p.v >= y && p.v < y + size[bands[j]]) { showTip(ev, allocInfo(bands[j])); return; }
      }
      hideTip();
    };
    canvas.onmouseleave = hideTip;
    canvas.onclick = function (ev) { moment = sample[columnAt(ev).c]; draw(); showMoment(); };

    var axis = document.getElementById('axis');
    axis.textContent = '';
    [0, 0.25, 0.5, 0.75, 1].forEach(function (f) { axis.appendChild(el('span', 'event ' + Math.round(f * N))); });

    /* segments and blocks at the moment */
    var S = D.S || { t0: [], d: [], ad: [], sz: [] };
    var ns = S.t0.length, sStart = undelta(S.t0), sAddr = undelta(S.ad), sSize = S.sz, sDur = S.d;
    var sAlloc = column(S.a, ns, 0);
    function showMoment() {
      var m = moment, live = [], j;
      for (j = 0; j < n; ++j) if (start[j] <= m && m < end[j]) live.push(j);
      live.sort(function (a, b) { return alloc[a] - alloc[b] || addr[a] - addr[b]; });
      var segs = [], inSeg = new Uint8Array(live.length);
      var segIdx = [];
      for (j = 0; j < ns; ++j) if (sStart[j] <= m && m < sStart[j] + sDur[j]) segIdx.push(j);
      segIdx.sort(function (a, b) { return sAlloc[a] - sAlloc[b] || sAddr[a] - sAddr[b]; });
      var liveAddr = live.map(function (x) { return alloc[x] * 1e18 + addr[x]; });
      function lower(v) {
        var lo = 0, hi = live.length;
        while (lo < hi) { var mid = (lo + hi) >> 1; if (liveAddr[mid] < v) lo = mid + 1; else hi = mid; }
        return lo;
      }
      segIdx.forEach(function (s) {
        var blocks = [], used = 0;
        for (var q = lower(sAlloc[s] * 1e18 + sAddr[s]); q < live.length && alloc[live[q]] === sAlloc[s] &&
             addr[live[q]] < sAddr[s] + sSize[s]; ++q) {
          var b = live[q];
          inSeg[q] = 1;
          used += size[b];
          blocks.push({ addr: addr[b], size: size[b], color: bandColor[b] || '#6f8fb8', info: allocInfo(b) });
        }
        segs.push({ label: hex(sAddr[s]) + ' ' + fmtBytes(sSize[s]), addr: sAddr[s], size: sSize[s], blocks: blocks,
                    info: 'segment ' + hex(sAddr[s]) + ' of allocator ' + sAlloc[s] + '\n' + fmtBytes(sSize[s]) +
                        ', ' + fmtBytes(used) + ' allocated (' + (100 * used / sSize[s]).toFixed(0) +
                        '%)\nmapped at event ' + sStart[s] });
      });
      /* allocations outside recorded segments: packed in address order,
         in rows of equal bytes */
      var rest = [], restBytes = 0;
      for (j = 0; j < live.length; ++j) if (!inSeg[j]) { rest.push(live[j]); restBytes += size[live[j]]; }
      var note = '';
      if (rest.length) {
        var rows = Math.min(24, Math.max(1, Math.ceil(rest.length / 40)));
        var rowBytes = restBytes / rows, pos = 0, row = null;
        for (j = 0; j < rest.length; ++j) {
          var b = rest[j], off = 0;
          while (off < size[b]) {
            if (!row || pos >= row.addr + rowBytes - 1e-6) {
              row = { label: segs.length + ': ' + fmtBytes(rowBytes), addr: pos, size: rowBytes, blocks: [],
                      info: 'allocations outside recorded segments, packed in address order' };
              segs.push(row);
            }
            var take = Math.min(size[b] - off, row.addr + rowBytes - pos);
            row.blocks.push({ addr: pos, size: take, color: bandColor[b] || '#6f8fb8', info: allocInfo(b) });
            pos += take; off += take;
            if (take <= 0) break;
          }
        }
        note = ns ? rest.length + ' live allocations lie outside the recorded segments: drawn packed after them.'
                  : 'The trace records no segments: the ' + rest.length +
                    ' live allocations are drawn packed in address order, ' + rows + ' rows of equal bytes.';
      }
      var liveBytes = 0;
      live.forEach(function (x) { liveBytes += size[x]; });
      document.getElementById('moment-title').textContent = 'Segments and blocks at event ' + m +
          (m === peakAt ? ' (the peak)' : '') + ': ' + fmtBytes(liveBytes) + ' in ' + live.length + ' allocations';
      legend([['#6f8fb8', 'allocated (banded ones in their timeline colour)'], ['#e6e6e6', 'free in a segment']]);
      drawSegments(segs, note);
      live.sort(function (a, b) { return size[b] - size[a]; });
      document.getElementById('largest-title').textContent = 'Largest allocations live at event ' + m +
          (m === peakAt ? ' (the peak)' : '');
      fillTable(live.slice(0, TABLE_ROWS).map(function (x) {
        return { size: size[x], req: req[x], addr: addr[x], stream: stream[x], from: start[x],
                 to: end[x] >= N ? 'never' : String(end[x]), where: where(x, false), whereAll: where(x, true) };
      }));
    }

    layout();
    draw();
    showMoment();
    var resizeTimer = null;
    window.addEventListener('resize', function () {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(function () { layout(); draw(); showMoment(); }, 150);
    });
  }

  var t0 = performance.now();
  try {
    var D = JSON.parse(document.getElementById('dao-data').textContent);
    if (D.kind === 'snapshot') initSnapshot(D); else initTrace(D);
  } catch (e) {
    reportError('error: ' + (e && e.stack ? e.stack : e));
  }
  body.setAttribute('data-load-ms', String(Math.round(performance.now() - t0)));
  body.setAttribute('data-ready', '1');
})();
