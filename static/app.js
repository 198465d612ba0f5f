//! Vigie: keyboard shortcuts (queue: j/k move, o or Enter opens, c claims, / focuses the filter; replay: arrow keys step; SQL console: Ctrl+Enter runs) and small comforts. Everything works without it.
(function () {
  'use strict';

  function typing(e) {
    var t = e.target;
    return t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
  }

  var rows = Array.prototype.slice.call(document.querySelectorAll('tr.qrow'));
  var cur = -1;

  function select(i) {
    if (!rows.length) { return; }
    cur = Math.max(0, Math.min(rows.length - 1, i));
    rows.forEach(function (r, k) {
      r.classList.toggle('selected', k === cur);
      r.setAttribute('aria-selected', k === cur ? 'true' : 'false');
    });
    rows[cur].scrollIntoView({ block: 'nearest' });
  }

  function go(el) {
    if (el && el.getAttribute('href')) { window.location.href = el.getAttribute('href'); }
  }

  // SQL console: Ctrl+Enter (or Cmd+Enter) runs the query.
  var sqlText = document.getElementById('sql-text');
  if (sqlText) {
    sqlText.addEventListener('keydown', function (e) {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        document.getElementById('sql-run').click();
      }
    });
  }

  document.addEventListener('keydown', function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) { return; }
    if (typing(e)) {
      if (e.key === 'Escape') { e.target.blur(); }
      return;
    }
    if (e.key === '/') {
      var f = document.querySelector('#queue-filters select, #queue-filters input');
      if (f) { e.preventDefault(); f.focus(); }
      return;
    }
    if (rows.length) {
      if (e.key === 'j') { e.preventDefault(); select(cur + 1); return; }
      if (e.key === 'k') { e.preventDefault(); select(cur < 0 ? 0 : cur - 1); return; }
      if ((e.key === 'o' || e.key === 'Enter') && cur >= 0) {
        e.preventDefault();
        window.location.href = rows[cur].getAttribute('data-href');
        return;
      }
      if (e.key === 'c' && cur >= 0) {
        var form = rows[cur].querySelector('form.claim-form');
        if (form) { e.preventDefault(); form.submit(); }
        return;
      }
    }
    if (e.key === 'ArrowLeft') { go(document.getElementById('nav-prev')); }
    else if (e.key === 'ArrowRight') { go(document.getElementById('nav-next')); }
    else if (e.key === 'Home') { go(document.getElementById('nav-first')); }
    else if (e.key === 'End') { go(document.getElementById('nav-last')); }
  });

  rows.forEach(function (r, i) {
    r.addEventListener('click', function (ev) {
      if (ev.target.closest('a, button, form, input, select, textarea')) { return; }
      select(i);
    });
    r.addEventListener('dblclick', function (ev) {
      if (ev.target.closest('a, button, form')) { return; }
      window.location.href = r.getAttribute('data-href');
    });
  });

  // Keep the current replay event in view in the timeline.
  var current = document.querySelector('#timeline li.current');
  var box = document.getElementById('timeline');
  if (current && box) {
    box.scrollTop = current.offsetTop - box.offsetTop - box.clientHeight / 2 + current.clientHeight / 2;
  }
}());
