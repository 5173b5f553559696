// The devtools page's script, shipped as a string (no bundler, nothing fetched at run time). It builds
// every node with createElement and fills it with textContent: model text, tool arguments and results
// are hostile, so none of them ever reaches an HTML parser. Written as ES2017 without template literals.

/** The browser script of the devtools page (inlined, allowed by the page's CSP through its hash). */
export const DEVTOOLS_SCRIPT = String.raw`(function () {
  'use strict';
  var KEY = 'helix-devtools-token';
  var S = { token: null, sessionId: null, tail: null, refresh: 0, agents: [], tailLines: 0 };
  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function short(id) { return String(id).length > 12 ? String(id).slice(0, 8) + '…' : String(id); }
  function json(value, max) {
    var t;
    try { t = JSON.stringify(value); } catch (e) { t = String(value); }
    if (t === undefined) t = 'undefined';
    max = max || 400;
    return t.length > max ? t.slice(0, max) + '…' : t;
  }
  function ms(x) { var n = Number(x); return (n < 10 ? Math.round(n * 10) / 10 : Math.round(n)) + ' ms'; }
  function enc(id) { return encodeURIComponent(id); }
  function fmtTime(ms) { var d = new Date(ms); return d.toISOString().slice(11, 23); }

  function headers(extra) {
    var h = { accept: 'application/json' };
    if (S.token) h.authorization = 'Bearer ' + S.token;
    if (extra) for (var k in extra) h[k] = extra[k];
    return h;
  }
  function api(path, body) {
    var init = { headers: headers(body === undefined ? undefined : { 'content-type': 'application/json' }), cache: 'no-store', credentials: 'same-origin' };
    if (body !== undefined) { init.method = 'POST'; init.body = JSON.stringify(body); }
    return fetch(path, init).then(function (res) {
      if (res.status === 401) { showLogin(S.token ? 'The server refused this token.' : ''); throw new Error('not authenticated'); }
      return res.json().then(function (data) {
        if (!res.ok) throw new Error((data && data.message) || ('HTTP ' + res.status));
        return data;
      });
    });
  }

  // ---- auth: the token comes from #token=... (removed from the address bar) or the form; it lives in this tab only.
  function readToken() {
    var m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
    if (m) {
      try { sessionStorage.setItem(KEY, decodeURIComponent(m[1])); } catch (e) { /* storage off: keep it in memory */ S.token = decodeURIComponent(m[1]); }
      history.replaceState(null, '', location.pathname + location.search);
    }
    try { S.token = sessionStorage.getItem(KEY) || S.token; } catch (e) { /* ignore */ }
  }
  function showLogin(problem) {
    $('app').hidden = true;
    $('login').hidden = false;
    $('login-error').textContent = problem || '';
    stopTail();
  }
  function showApp() { $('login').hidden = true; $('app').hidden = false; }

  // ---- sessions
  function loadSessions() {
    return api('/api/sessions?limit=50').then(function (data) {
      showApp();
      var list = $('sessions');
      clear(list);
      if (data.sessions.length === 0) list.appendChild(el('li', 'empty', 'No sessions yet: send a message.'));
      data.sessions.forEach(function (s) {
        var li = el('li');
        var b = el('button', 'session' + (s.sessionId === S.sessionId ? ' selected' : ''));
        b.type = 'button';
        b.setAttribute('data-session', s.sessionId);
        b.appendChild(el('span', 'sid', short(s.sessionId)));
        b.appendChild(el('span', 'agent', s.agentType));
        b.appendChild(el('span', 'status ' + (s.status || 'none'), s.status || '–'));
        b.title = s.sessionId;
        b.addEventListener('click', function () { select(s.sessionId); });
        li.appendChild(b);
        list.appendChild(li);
      });
    });
  }
  function loadAgents() {
    return api('/api/agents').then(function (data) {
      showApp();
      S.agents = data.agents;
      var sel = $('agent');
      clear(sel);
      data.agents.forEach(function (a) { var o = el('option', '', a.name); o.value = a.name; sel.appendChild(o); });
    });
  }

  function select(sessionId) {
    S.sessionId = sessionId;
    stopTail();
    clear($('tail'));
    S.tailLines = 0;
    $('agent').disabled = sessionId !== null;
    $('chat-target').textContent = sessionId === null ? 'a new session' : 'session ' + short(sessionId);
    Array.prototype.forEach.call(document.querySelectorAll('button.session'), function (b) {
      b.classList.toggle('selected', b.getAttribute('data-session') === sessionId);
    });
    if (sessionId === null) { $('detail').hidden = true; return Promise.resolve(); }
    $('detail').hidden = false;
    return loadSession().then(function (tl) { startTail(sessionId, Math.max(0, tl.nextSeq - 200)); });
  }
  function scheduleRefresh() {
    if (S.refresh) return;
    S.refresh = setTimeout(function () {
      S.refresh = 0;
      if (S.sessionId) loadSession().catch(function () { /* shown by api */ });
      loadSessions().catch(function () { /* shown by api */ });
    }, 150);
  }
  function loadSession() {
    var id = S.sessionId;
    return Promise.all([api('/api/sessions/' + enc(id)), api('/api/sessions/' + enc(id) + '/timeline')]).then(function (r) {
      if (S.sessionId !== id) return r[1];
      renderSummary(r[0]);
      renderApprovals(r[0]);
      renderTimeline(r[1]);
      renderCommits(r[1]);
      renderHooks(r[1]);
      renderMessages(r[0]);
      return r[1];
    });
  }

  // ---- rendering (textContent only)
  function kv(dl, k, v) { dl.appendChild(el('dt', '', k)); dl.appendChild(el('dd', '', v)); }
  function renderSummary(d) {
    var box = $('summary');
    clear(box);
    var dl = el('dl');
    kv(dl, 'session', d.sessionId);
    kv(dl, 'agent', d.agentType);
    var st = el('dd', 'status ' + (d.status || 'none'), d.status || '–');
    st.id = 'session-status';
    dl.appendChild(el('dt', '', 'status'));
    dl.appendChild(st);
    kv(dl, 'steps', d.stepCount);
    kv(dl, 'runs', d.runs.length);
    var u = d.usage;
    var r = d.usageRollup;
    // The usage store counts every model call; without one, the totals come from the runs' terminal chunks.
    if (r) kv(dl, 'tokens', r.tokens.prompt + ' in · ' + r.tokens.completion + ' out' + (r.tokens.reasoning ? ' · ' + r.tokens.reasoning + ' reasoning' : '') + (r.tokens.cached ? ' · ' + r.tokens.cached + ' cached' : '') + ' · ' + r.modelCalls + ' model calls · ' + r.toolStats.totalCalls + ' tool calls');
    else kv(dl, 'tokens', u.inputTokens + ' in · ' + u.outputTokens + ' out' + (u.reasoningTokens ? ' · ' + u.reasoningTokens + ' reasoning' : '') + (u.cacheReadTokens ? ' · ' + u.cacheReadTokens + ' cached' : ''));
    kv(dl, 'cost', '$' + Number(u.costUsd || 0).toFixed(4));
    box.appendChild(dl);
  }
  function renderApprovals(d) {
    var box = $('approval-list');
    clear(box);
    var pending = d.pendingCalls.filter(function (p) { return p.kind === 'approval'; });
    $('approvals').hidden = d.pendingCalls.length === 0;
    d.pendingCalls.forEach(function (p) {
      var card = el('div', 'approval');
      card.appendChild(el('strong', '', p.toolName));
      card.appendChild(el('span', 'kind', p.kind));
      card.appendChild(el('pre', 'args', json(p.input, 2000)));
      if (p.kind === 'approval') {
        var ok = el('button', 'approve', 'Approve');
        ok.type = 'button';
        ok.setAttribute('data-call', p.toolCallId);
        var no = el('button', 'reject', 'Reject');
        no.type = 'button';
        no.setAttribute('data-call', p.toolCallId);
        ok.addEventListener('click', function () { decide('approve', p.toolCallId, ok, no); });
        no.addEventListener('click', function () { decide('reject', p.toolCallId, ok, no); });
        card.appendChild(ok);
        card.appendChild(no);
      } else {
        card.appendChild(el('span', 'note', p.kind === 'client' ? 'waits for a client tool result' : 'waits for its sub-agents'));
      }
      box.appendChild(card);
    });
    return pending;
  }
  function decide(kind, toolCallId, ok, no) {
    ok.disabled = true; no.disabled = true;
    var body = kind === 'approve' ? { toolCallId: toolCallId } : { toolCallId: toolCallId, reason: 'Rejected in the devtools.' };
    api('/api/sessions/' + enc(S.sessionId) + '/' + kind, body).then(scheduleRefresh, function (e) {
      ok.disabled = false; no.disabled = false;
      $('chat-error').textContent = kind + ' failed: ' + e.message;
    });
  }

  function renderTimeline(tl) {
    var box = $('timeline');
    clear(box);
    var now = Date.now();
    var times = [];
    function t(x) { times.push(x); return x; }
    var lanes = { runs: [], steps: [], tools: [], commits: [], hooks: [] };
    tl.runs.forEach(function (r) { lanes.runs.push({ a: t(r.startedAt), b: t(r.endedAt || now), label: r.signal + ' · ' + r.status, cls: 'run ' + r.status, item: r }); });
    tl.steps.forEach(function (s) { lanes.steps.push({ a: t(s.startedAt), b: t(s.endedAt || now), label: 'step ' + s.stepIndex + (s.attempt > 1 ? ' (try ' + s.attempt + ')' : ''), cls: 'step', item: s }); });
    tl.tools.forEach(function (c) { lanes.tools.push({ a: t(c.startedAt), b: t(c.endedAt || now), label: c.toolName + (c.durationMs !== undefined ? ' ' + ms(c.durationMs) : c.approval ? ' (approval)' : ''), cls: 'tool ' + (c.success === undefined ? 'open' : c.success ? 'ok' : 'err'), item: c }); });
    tl.commits.forEach(function (c) { lanes.commits.push({ a: t(c.at), b: c.at, label: c.label, cls: 'commit ' + c.label, item: c }); });
    tl.hooks.forEach(function (h) { lanes.hooks.push({ a: t(h.at - h.durationMs), b: t(h.at), label: h.hookPoint + ' ' + h.decision, cls: 'hook ' + h.decision, item: h }); });
    // The axis orders events (every distinct time gets its own slot): a fast run stays readable. Durations are in the labels.
    var uniq = times.sort(function (x, y) { return x - y; }).filter(function (x, i, a) { return i === 0 || a[i - 1] !== x; });
    var rank = new Map();
    uniq.forEach(function (x, i) { rank.set(x, i); });
    var n = Math.max(uniq.length - 1, 1);
    function pos(x) { var r = rank.get(x); return (r === undefined ? 0 : r) / n * 96 + 1; }
    ['runs', 'steps', 'tools', 'commits', 'hooks'].forEach(function (name) {
      var row = el('div', 'lane');
      row.setAttribute('data-lane', name);
      row.appendChild(el('div', 'lane-name', name === 'hooks' ? 'hook firings' : name));
      var track = el('div', 'track');
      var rows = [];
      lanes[name].forEach(function (it) {
        var left = pos(it.a);
        var width = Math.max(pos(it.b) - left, name === 'commits' ? 0 : 2.5);
        // Stack overlapping items on sub-rows.
        var level = 0;
        while (rows[level] !== undefined && rows[level] > left) level++;
        rows[level] = left + width + 0.2;
        var d = el('button', 'item ' + it.cls, it.label);
        d.type = 'button';
        d.style.left = left + '%';
        if (name !== 'commits') d.style.width = width + '%';
        d.style.top = (level * 22) + 'px';
        d.title = json(it.item, 600);
        d.addEventListener('click', function () { $('inspect').textContent = JSON.stringify(it.item, null, 2); });
        track.appendChild(d);
      });
      track.style.height = Math.max(1, rows.length) * 22 + 'px';
      row.appendChild(track);
      box.appendChild(row);
    });
  }
  function patchLine(p) {
    var path = '/' + p.path.map(String).join('/');
    return (p.op === 'add' ? '+ ' : p.op === 'remove' ? '- ' : '~ ') + path + (p.op === 'remove' ? '' : ' = ' + json(p.value, 300));
  }
  function renderCommits(tl) {
    var list = $('commits');
    clear(list);
    tl.commits.forEach(function (c) {
      var li = el('li', 'commit-row');
      var head = el('div', 'commit-head');
      head.appendChild(el('span', 'badge ' + c.label, c.label));
      head.appendChild(el('span', '', c.kind + ' · run ' + short(c.runId) + (c.stepCount !== undefined ? ' · step count ' + c.stepCount : '') + ' · ' + fmtTime(c.at)));
      li.appendChild(head);
      if (c.patches.length > 0) {
        var pre = el('pre', 'diff', c.patches.map(patchLine).join('\n') + (c.patchesTruncated ? '\n… more patches' : ''));
        li.appendChild(pre);
      } else if (c.label !== 'K1') {
        li.appendChild(el('div', 'nodiff', 'no state change'));
      }
      list.appendChild(li);
    });
  }
  function renderHooks(tl) {
    var table = $('hooks');
    clear(table);
    var head = el('tr');
    ['time', 'point', 'hook', 'decision', 'took', 'reason'].forEach(function (h) { head.appendChild(el('th', '', h)); });
    table.appendChild(head);
    if (tl.hooks.length === 0) {
      var tr0 = el('tr');
      var td0 = el('td', 'empty', 'No hook firings recorded (run the executor with auditHooks: "all" to record every firing, not only decisions).');
      td0.colSpan = 6;
      tr0.appendChild(td0);
      table.appendChild(tr0);
    }
    tl.hooks.slice(-200).forEach(function (h) {
      var tr = el('tr', 'hook-row ' + h.decision);
      [fmtTime(h.at), h.hookPoint, h.hookName, h.decision, ms(h.durationMs), h.reason || (h.policy ? 'policy ' + h.policy : '')].forEach(function (v) { tr.appendChild(el('td', '', v)); });
      table.appendChild(tr);
    });
  }
  function renderMessages(d) {
    var box = $('messages');
    clear(box);
    d.messages.slice(-50).forEach(function (m) {
      var row = el('div', 'msg ' + m.role);
      row.appendChild(el('span', 'role', m.role === 'tool' ? 'tool ' + m.toolName : m.role));
      var text = typeof m.content === 'string' ? m.content : json(m.content, 1000);
      if (m.toolCalls && m.toolCalls.length) text += (text ? '\n' : '') + m.toolCalls.map(function (c) { return '→ ' + c.name + ' ' + json(c.arguments, 300); }).join('\n');
      row.appendChild(el('span', 'text', text));
      box.appendChild(row);
    });
  }

  // ---- live tail: the session's stream as SSE, read with fetch so it carries the token.
  function describe(c) {
    switch (c.type) {
      case 'text_delta': case 'reasoning_delta': return json(c.delta, 200);
      case 'run_started': return c.signal + (c.input !== undefined ? ' ' + json(c.input, 200) : '');
      case 'step_start': return 'step ' + c.stepIndex + ' attempt ' + c.attempt;
      case 'tool_start': return c.toolName + ' ' + json(c.arguments, 200);
      case 'tool_end': return c.toolName + (c.success ? ' ok ' + json(c.result, 200) : ' failed ' + json(c.error, 200)) + ' ' + ms(c.durationMs);
      case 'tool_approval_request': return c.toolName + ' needs approval ' + json(c.arguments, 200);
      case 'hook_decision': return c.hookPoint + ' ' + c.hookName + ' ' + c.decision + ' ' + ms(c.durationMs) + (c.reason ? ' ' + c.reason : '');
      case 'state_patch': return c.patches.map(patchLine).join('; ');
      case 'suspended': return c.reason + ' ' + c.pendingToolCallIds.join(',');
      case 'end': return json(c.output, 200);
      case 'error': return c.status + ' ' + (c.errorInfo ? c.errorInfo.code + ': ' + c.errorInfo.message : '');
      default: return json(c, 200);
    }
  }
  var REFRESH_ON = { run_started: 1, step_start: 1, tool_end: 1, tool_approval_request: 1, hook_decision: 1, state_patch: 1, suspended: 1, end: 1, error: 1 };
  function tailLine(c) {
    var pre = $('tail');
    var line = el('div', 'line ' + c.type);
    line.appendChild(el('span', 'seq', c.seq));
    line.appendChild(el('span', 'type', c.type));
    line.appendChild(el('span', 'what', describe(c)));
    pre.appendChild(line);
    S.tailLines++;
    while (S.tailLines > 300) { pre.removeChild(pre.firstChild); S.tailLines--; }
    pre.scrollTop = pre.scrollHeight;
    if (REFRESH_ON[c.type]) scheduleRefresh();
  }
  function stopTail() { if (S.tail) { S.tail.abort(); S.tail = null; } }
  function startTail(sessionId, from) {
    var abort = new AbortController();
    S.tail = abort;
    var next = from;
    fetch('/api/sessions/' + enc(sessionId) + '/stream?from=' + from, { headers: headers({ accept: 'text/event-stream' }), signal: abort.signal, credentials: 'same-origin' }).then(function (res) {
      if (res.status === 401) { showLogin('The server refused this token.'); return; }
      if (!res.ok || !res.body) throw new Error('HTTP ' + res.status);
      var reader = res.body.getReader();
      var decoder = new TextDecoder();
      var buf = '';
      function pump() {
        return reader.read().then(function (r) {
          if (r.done) return;
          buf += decoder.decode(r.value, { stream: true });
          var end;
          while ((end = buf.indexOf('\n\n')) >= 0) {
            var block = buf.slice(0, end);
            buf = buf.slice(end + 2);
            var ev = 'message', data = null;
            block.split('\n').forEach(function (l) {
              if (l.indexOf('event: ') === 0) ev = l.slice(7);
              else if (l.indexOf('data: ') === 0) data = l.slice(6);
            });
            if (data === null) continue;
            if (ev === 'message') { var c = JSON.parse(data); next = c.seq + 1; tailLine(c); }
          }
          return pump();
        });
      }
      return pump();
    }).catch(function (e) {
      if (abort.signal.aborted) return;
      $('tail-error').textContent = 'live tail: ' + e.message + ' (reconnecting)';
    }).then(function () {
      // The stream ended or failed: read on from where it stopped, unless another session was picked.
      if (!abort.signal.aborted && S.tail === abort) setTimeout(function () { if (S.tail === abort) startTail(sessionId, next); }, 1000);
    });
  }

  // ---- chat
  function send(ev) {
    ev.preventDefault();
    var input = $('message');
    var text = input.value;
    if (!text.trim()) return;
    $('chat-error').textContent = '';
    var button = $('send');
    button.disabled = true;
    var call = S.sessionId === null
      ? api('/api/sessions', { input: text, agent: $('agent').value })
      : api('/api/sessions/' + enc(S.sessionId) + '/messages', { message: text });
    call.then(function (answer) {
      input.value = '';
      if (S.sessionId !== answer.sessionId) return loadSessions().then(function () { return select(answer.sessionId); });
      scheduleRefresh();
    }).catch(function (e) { $('chat-error').textContent = e.message; }).then(function () { button.disabled = false; });
  }

  function start() {
    readToken();
    $('login-form').addEventListener('submit', function (ev) {
      ev.preventDefault();
      S.token = $('token').value.trim() || null;
      $('token').value = '';
      try { if (S.token) sessionStorage.setItem(KEY, S.token); } catch (e) { /* ignore */ }
      boot();
    });
    $('forget').addEventListener('click', function () {
      try { sessionStorage.removeItem(KEY); } catch (e) { /* ignore */ }
      S.token = null;
      showLogin('');
    });
    $('refresh').addEventListener('click', function () { loadSessions().catch(function () { /* shown */ }); });
    $('new-session').addEventListener('click', function () { select(null); $('message').focus(); });
    $('chat').addEventListener('submit', send);
    boot();
  }
  function boot() {
    loadAgents().then(loadSessions).then(function () { return select(S.sessionId); }).catch(function () { /* the login form shows */ });
  }
  start();
})();
`;
