//! The operator inbox: one static page for `GET /inbox` and
//! `GET /inbox/{id}` (docs/approvals.md, "The approvers' routes"). It holds no
//! data: its script signs in with an approver token (kept in
//! sessionStorage, sent as `Authorization: Bearer`), or in link-holder
//! mode uses the `#cap=` fragment (never sent in a URL), and fetches JSON:
//! `GET /approvals?status=pending`, `GET /clarifications?status=pending`,
//! `GET /approvals/{id}`, `POST /approvals/{id}/decision`,
//! `POST /approval-links/{id}`.
//!
//! Like the clarify page: self-contained, one inline script and one style
//! carrying the response's nonce under [`csp`], no inline handlers, usable
//! with a keyboard and a screen reader. Every field of the JSON is
//! untrusted and reaches the page only as text nodes, with the markers of
//! [`super::shown`] (the script mirrors it; tests/fixtures/visible_cases.json
//! keeps the two in step), each detail in its own labelled box.

pub use crate::clarify::page::csp;
use crate::clarify::page::escape;

use super::shown;

/// Where the approver token is kept, per tab.
pub const TOKEN_KEY: &str = "toolgate.approver_token";

const STYLE: &str = "body{font:16px/1.5 system-ui,sans-serif;max-width:48rem;margin:1.5rem auto;padding:0 1rem;color:#1a1a1a}\
header{display:flex;flex-wrap:wrap;gap:1rem;align-items:center;justify-content:space-between;border-bottom:1px solid #cbd5e1;margin-bottom:1rem}\
h1{font-size:1.3rem}h2{font-size:1.05rem;margin:.25rem 0}\
a{color:#1e40af}a:focus,button:focus,input:focus{outline:3px solid #93c5fd;outline-offset:2px}[tabindex=\"-1\"]:focus{outline:none}\
button{font:inherit;padding:.5rem 1rem;margin:.25rem .5rem .25rem 0;border:1px solid #2563eb;border-radius:.375rem;background:#fff;color:#1e40af;cursor:pointer}\
button:hover,button:focus{background:#2563eb;color:#fff}button:disabled{opacity:.5;cursor:default}\
button.approve{border-color:#047857;color:#065f46}button.approve:hover,button.approve:focus{background:#047857;color:#fff}\
button.reject{border-color:#b91c1c;color:#991b1b}button.reject:hover,button.reject:focus{background:#b91c1c;color:#fff}\
input{font:inherit;width:100%;box-sizing:border-box;padding:.4rem}\
.items{list-style:none;padding:0}.items li{border:1px solid #cbd5e1;border-radius:.375rem;padding:.5rem 1rem;margin:.5rem 0}\
.item-text{white-space:pre-wrap;overflow-wrap:anywhere}\
.meta{color:#475569;font-size:.9rem;margin:.25rem 0;overflow-wrap:anywhere}\
.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:1rem 0}.facts div{display:contents}[hidden]{display:none!important}.facts dt{font-weight:600}.facts dd{margin:0;overflow-wrap:anywhere}\
.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.9rem}\
.field{border:1px solid #94a3b8;border-radius:.375rem;margin:1rem 0;padding:.5rem 1rem}\
.field-count{color:#475569;font-size:.85rem;margin:0}\
.field-text{white-space:pre-wrap;overflow-wrap:anywhere;margin:.5rem 0}\
pre.field-text{font:14px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace;background:#f8fafc;padding:.5rem;border-left:4px solid #2563eb}\
.ctl{font:600 .8em ui-monospace,monospace;background:#fde68a;color:#7c2d12;border:1px solid #b45309;border-radius:.2rem;padding:0 .15rem;white-space:nowrap}\
.warn{background:#fffbeb;border-left:4px solid #d97706;padding:.4rem .75rem;margin:.5rem 0}\
.note{background:#eff6ff;border-left:4px solid #2563eb;padding:.4rem .75rem}\
.status{padding:.75rem 1rem;border-radius:.375rem;background:#ecfdf5;border:1px solid #10b981}\
.status.bad{background:#fef2f2;border-color:#ef4444}";

const SCRIPT: &str = r#"
'use strict';
// Markers: a mirror of shared/src/approvals/shown.rs; the table is its own.
const NAMES = __NAMES__;
const WARNINGS = __WARNINGS__;
const MAX_RUN = __MAX_RUN__;
const RANGES = __RANGES__;
function isSelector(cp) { return (cp >= 0xFE00 && cp <= 0xFE0F) || (cp >= 0xE0100 && cp <= 0xE01EF); }
function special(cp) {
  if (Object.prototype.hasOwnProperty.call(NAMES, String(cp))) {
    const e = NAMES[String(cp)];
    return {short: e[0], name: e[1], kind: e[2]};
  }
  for (const r of RANGES) {
    if (cp >= r[0] && cp <= r[1]) return {short: null, name: r[2], kind: r[3]};
  }
  return null;
}
function bareSelector(prev) {
  if (prev === null) return true;
  const p = prev.codePointAt(0);
  return p < 0x80 || isSelector(p) || special(p) !== null;
}
function hex(cp) { return 'U+' + cp.toString(16).toUpperCase().padStart(4, '0'); }
function pieces(text) {
  const chars = Array.from(String(text));
  const out = [], kinds = new Set();
  let plain = '', prev = null, longest = null, i = 0;
  const mark = (m) => { if (plain) out.push({text: plain}); plain = ''; out.push(m); };
  while (i < chars.length) {
    const c = chars[i];
    if (c === ' ' || c === '\t' || c === '\n') {
      let j = i + 1;
      while (j < chars.length && (c === '\n' ? chars[j] === '\n' : (chars[j] === ' ' || chars[j] === '\t'))) j++;
      const run = chars.slice(i, j), n = j - i;
      if (n > MAX_RUN) {
        let label = n + ' spaces and tabs';
        if (c === '\n') label = n + ' line breaks';
        else if (run.every((d) => d === ' ')) label = n + ' spaces';
        else if (run.every((d) => d === '\t')) label = n + ' tabs';
        mark({label: '\u27e8' + label + '\u27e9', title: label + ' in a row', chars: n});
        if (longest === null || n > longest.n) longest = {n: n, title: label + ' in a row'};
      } else {
        plain += run.join('');
      }
      prev = run[run.length - 1];
      i = j;
      continue;
    }
    const cp = c.codePointAt(0);
    const s = special(cp);
    if (s !== null) {
      kinds.add(s.kind);
      mark({label: '\u27e8' + hex(cp) + (s.short ? ' ' + s.short : '') + '\u27e9', title: hex(cp) + ' ' + s.name, chars: 1});
    } else if (isSelector(cp) && bareSelector(prev)) {
      kinds.add('invisible');
      mark({label: '\u27e8' + hex(cp) + '\u27e9', title: hex(cp) + ' VARIATION SELECTOR', chars: 1});
    } else {
      plain += c;
    }
    prev = c;
    i++;
  }
  if (plain) out.push({text: plain});
  return {pieces: out, kinds: kinds, longest: longest};
}
function visiblePlain(text) {
  return pieces(text).pieces.map((p) => p.label === undefined ? p.text : p.label).join('');
}
function suspicious(text) {
  const p = pieces(text);
  const out = WARNINGS.filter((w) => p.kinds.has(w[0])).map((w) => w[1]);
  if (p.longest !== null) out.push('holds ' + p.longest.title);
  return out;
}
function warningLine(text) {
  const items = suspicious(text).map((s) => s.startsWith('holds ') ? s.slice(6) : s);
  if (items.length === 0) return null;
  const list = items.length === 1 ? items[0] : items.slice(0, -1).join(', ') + ' and ' + items[items.length - 1];
  return 'Look closely: this text holds ' + list + ' (each shown as a \u27e8\u2026\u27e9 marker).';
}
// Untrusted text goes into the page only here: text nodes and marker spans.
function show(el, text) {
  el.textContent = '';
  for (const p of pieces(text == null ? '' : text).pieces) {
    if (p.label === undefined) {
      el.append(document.createTextNode(p.text));
    } else {
      const span = document.createElement('span');
      span.className = 'ctl';
      span.title = p.title;
      span.textContent = p.label;
      el.append(span);
    }
  }
  return el;
}
function make(tag, cls, text) {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined) show(el, text);
  return el;
}
function str(v) { return v === undefined || v === null ? '' : String(v); }

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = '__TOKEN_KEY__';
const route = /^(.*)\/inbox(?:\/([^/]*))?\/?$/.exec(location.pathname);
const base = route ? route[1] : '';
const id = route && route[2] ? route[2] : null;
let cap = null;
if (location.hash.startsWith('#cap=')) {
  try { cap = decodeURIComponent(location.hash.slice(5)); } catch (e) { cap = null; }
}
let token = null;
try { token = sessionStorage.getItem(TOKEN_KEY); } catch (e) { token = null; }

function message(text) {
  $('loading').hidden = true;
  show($('message'), text);
  $('message').hidden = false;
  $('message').focus();
}
function clearMessage() { $('message').hidden = true; $('message').textContent = ''; }
function showOnly(which) {
  for (const s of ['sign-in', 'inbox', 'approval']) $(s).hidden = s !== which;
  $('loading').hidden = true;
  $('sign-out').hidden = cap !== null || !token;
  $('to-inbox').hidden = cap !== null;
}
function signIn(text) {
  try { sessionStorage.removeItem(TOKEN_KEY); } catch (e) { /* nothing kept */ }
  token = null;
  showOnly('sign-in');
  if (text) message(text);
  else $('token').focus();
}
function errorText(res, what) {
  const e = res.body && res.body.error;
  if (e && typeof e.message === 'string') return e.message;
  return what + ' failed (HTTP ' + res.status + ').';
}
async function call(method, path, body) {
  const headers = {'Accept': 'application/json'};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (cap === null && token) headers['Authorization'] = 'Bearer ' + token;
  const r = await fetch(base + path, {
    method: method, headers: headers, cache: 'no-store', redirect: 'error',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let parsed = null;
  try { parsed = await r.json(); } catch (e) { parsed = null; }
  return {status: r.status, ok: r.ok, body: parsed};
}
function refused(res) { return cap === null && (res.status === 401 || res.status === 403); }

async function loadInbox() {
  clearMessage();
  const [a, q] = await Promise.all([
    call('GET', '/approvals?status=pending'),
    call('GET', '/clarifications?status=pending'),
  ]);
  if (refused(a) || refused(q)) return signIn(errorText(refused(a) ? a : q, 'Signing in'));
  showOnly('inbox');
  fillList($('approvals'), $('approvals-empty'), a, 'approvals', approvalItem);
  fillList($('questions'), $('questions-empty'), q, 'clarifications', questionItem);
}
function fillList(list, empty, res, key, item) {
  list.textContent = '';
  const items = res.ok && res.body && Array.isArray(res.body[key]) ? res.body[key] : null;
  if (items === null) {
    show(empty, errorText(res, 'Loading the list'));
    empty.hidden = false;
    return;
  }
  show(empty, key === 'approvals' ? 'No approval is waiting.' : 'No question is waiting.');
  empty.hidden = items.length > 0;
  for (const v of items) { if (v && typeof v === 'object') list.append(item(v)); }
}
function validId(v) { return typeof v === 'string' && /^[0-9a-f]{40}$/.test(v); }
function approvalItem(v) {
  const li = make('li', 'item');
  const title = make('p', 'item-text');
  if (validId(v.id)) {
    const a = make('a', null, v.summary || 'An approval');
    a.href = base + '/inbox/' + v.id;
    title.append(a);
  } else {
    show(title, v.summary || 'An approval');
  }
  li.append(title);
  li.append(make('p', 'meta', [str(v.tool), str(v.target)].filter(Boolean).join(' on ')
    + ' \u00b7 asked by ' + (v.caller == null ? 'an anonymous caller' : str(v.caller))
    + ' \u00b7 until ' + str(v.expires_at) + (v.ref ? ' \u00b7 ' + str(v.ref) : '')));
  const texts = [str(v.summary)].concat(Array.isArray(v.details) ? v.details.map((d) => str(d && d.text)) : []);
  if (texts.some((t) => suspicious(t).length > 0)) {
    li.append(make('p', 'warn', 'Some of its text holds hidden or deceptive characters: open it and look closely.'));
  }
  return li;
}
function questionItem(v) {
  const li = make('li', 'item');
  const title = make('p', 'item-text');
  if (validId(v.id)) {
    const a = make('a', null, v.question || 'A question');
    a.href = base + '/clarifications/' + v.id + '/answer';
    title.append(a);
  } else {
    show(title, v.question || 'A question');
  }
  li.append(title);
  const w = warningLine(str(v.question));
  if (w) li.append(make('p', 'warn', w));
  li.append(make('p', 'meta', 'until ' + str(v.expires_at)));
  return li;
}

async function loadApproval() {
  clearMessage();
  const res = cap === null
    ? await call('GET', '/approvals/' + id)
    : await call('POST', '/approval-links/' + id, {capability: cap});
  if (refused(res)) return signIn(errorText(res, 'Signing in'));
  if (!res.ok || !res.body || typeof res.body !== 'object') {
    showOnly('approval');
    $('approval-body').hidden = true;
    return message(errorText(res, 'Loading the approval'));
  }
  showApproval(res.body);
  $('summary').focus();
}
function outcome(v) {
  const s = str(v.status);
  if (s === 'approved') {
    return 'Approved by ' + str(v.approver) + ' at ' + str(v.decided_at) + '. '
      + (v.used_at ? 'Used by its run at ' + str(v.used_at) + '.' : 'Not used yet.');
  }
  if (s === 'rejected') return 'Rejected by ' + str(v.approver) + ' at ' + str(v.decided_at) + '.';
  if (s === 'expired') return 'Expired at ' + str(v.expires_at) + ' before anyone decided.';
  if (s === 'withdrawn') return 'Withdrawn before anyone decided.';
  return null;
}
function showApproval(v) {
  showOnly('approval');
  $('approval-body').hidden = false;
  show($('summary'), v.summary || 'An approval');
  const sw = warningLine(str(v.summary));
  $('summary-warning').hidden = !sw;
  show($('summary-warning'), sw || '');
  show($('f-status'), v.status === 'pending' ? 'waiting for a decision' : str(v.status));
  show($('f-tool'), str(v.tool));
  show($('f-target'), str(v.target));
  show($('f-caller'), v.caller == null ? 'an anonymous caller' : str(v.caller));
  // `digest` as the design names it, or the binding's `sha256`.
  const d = v.digest && typeof v.digest === 'object' ? v.digest : {};
  show($('f-digest'), d.command_sha256 ? 'command SHA-256 ' + str(d.command_sha256)
    : d.arguments_sha256 ? 'arguments SHA-256 ' + str(d.arguments_sha256)
    : v.sha256 ? 'SHA-256 ' + str(v.sha256) : '');
  show($('f-pinned'), str(v.pinned));
  show($('f-why'), str(v.why));
  for (const f of ['f-pinned', 'f-why']) $(f).parentElement.hidden = !$(f).textContent;
  show($('f-created'), str(v.created_at));
  show($('f-expires'), str(v.expires_at));
  show($('f-ref'), str(v.ref));
  const details = $('details');
  details.textContent = '';
  const list = Array.isArray(v.details) ? v.details : [];
  list.forEach((f, n) => {
    if (!f || typeof f !== 'object') return;
    const text = str(f.text);
    const box = make('section', 'field');
    const label = make('h2', 'field-label', str(f.label) || 'Detail');
    label.id = 'field-' + n;
    box.setAttribute('aria-labelledby', label.id);
    box.append(label);
    const count = Array.from(text).length;
    box.append(make('p', 'field-count', count === 1 ? '1 character' : count + ' characters'));
    const w = warningLine(text);
    if (w) box.append(make('p', 'warn', w));
    box.append(make(f.code ? 'pre' : 'p', 'field-text', text));
    details.append(box);
  });
  const pending = v.status === 'pending';
  $('decide').hidden = !pending;
  for (const b of [$('approve'), $('reject')]) b.disabled = !pending;
  const o = outcome(v);
  $('result').hidden = o === null;
  $('result').className = v.status === 'approved' ? 'status' : 'status bad';
  show($('result'), o || '');
}
async function decide(decision) {
  clearMessage();
  for (const b of [$('approve'), $('reject')]) b.disabled = true;
  let res;
  try {
    res = cap === null
      ? await call('POST', '/approvals/' + id + '/decision', {decision: decision})
      : await call('POST', '/approval-links/' + id, {capability: cap, decision: decision});
  } catch (e) {
    res = {status: 0, ok: false, body: {error: {message: 'Could not send the decision: ' + e}}};
  }
  if (res.status === 401 && cap === null) return signIn(errorText(res, 'Deciding'));
  const v = res.body && typeof res.body === 'object' ? res.body : {};
  // A refusal (409, 410) carries the approval as it stands.
  const e = v.error && typeof v.error === 'object' ? v.error : {};
  const view = res.ok ? v : (e.approval && typeof e.approval === 'object' ? e.approval : null);
  if (view && view.summary !== undefined) showApproval(view);
  if (!res.ok) {
    if (!view) for (const b of [$('approve'), $('reject')]) b.disabled = false;
    return message(errorText(res, 'Deciding'));
  }
  if (view.summary === undefined) {
    $('decide').hidden = true;
    $('result').hidden = false;
    show($('result'), outcome(view) || 'Recorded.');
  }
  $('result').focus();
}

$('sign-in').addEventListener('submit', (e) => {
  e.preventDefault();
  const t = $('token').value.trim();
  if (!t) return $('token').focus();
  try { sessionStorage.setItem(TOKEN_KEY, t); } catch (err) { /* this tab only */ }
  token = t;
  $('token').value = '';
  start();
});
$('sign-out').addEventListener('click', () => { signIn(); });
$('refresh').addEventListener('click', () => { loadInbox().catch(failed); });
$('approve').addEventListener('click', () => { decide('approve').catch(failed); });
$('reject').addEventListener('click', () => { decide('reject').catch(failed); });
$('to-inbox').href = base + '/inbox';

function failed(e) { message('Something went wrong: ' + e); }
function start() {
  $('link-note').hidden = cap === null;
  if (route === null) return message('The inbox lives at /inbox.');
  if (id !== null && !validId(id)) { showOnly('approval'); $('approval-body').hidden = true; return message('This address names no approval.'); }
  if (cap !== null) {
    if (id === null) { $('loading').hidden = true; return message('This link names no approval.'); }
    return loadApproval().catch(failed);
  }
  if (!token) return signIn();
  return (id === null ? loadInbox() : loadApproval()).catch(failed);
}
start();
"#;

const BODY: &str = r#"<header>
<p><strong>Toolgate</strong> approvals</p>
<nav aria-label="Inbox"><a id="to-inbox" href="/inbox">Everything waiting</a> <button type="button" id="sign-out" hidden>Sign out</button></nav>
</header>
<main id="main">
<p id="link-note" class="note" hidden>Anyone with this link can decide. Do not share it.</p>
<p id="message" class="status bad" role="alert" tabindex="-1" hidden></p>
<p id="loading" role="status">Loading…</p>
<form id="sign-in" aria-labelledby="sign-in-title" hidden>
<h1 id="sign-in-title">Sign in to decide</h1>
<p><label for="token">Approver token</label><br><input id="token" name="token" type="password" autocomplete="off" spellcheck="false" required></p>
<p><small>Kept in this tab only until you sign out or close it.</small></p>
<p><button type="submit">Sign in</button></p>
</form>
<section id="inbox" aria-labelledby="inbox-title" hidden>
<h1 id="inbox-title">Waiting for you</h1>
<p><button type="button" id="refresh">Refresh</button></p>
<h2 id="approvals-title">Approvals</h2>
<p id="approvals-empty" hidden></p>
<ul id="approvals" class="items" aria-labelledby="approvals-title"></ul>
<h2 id="questions-title">Questions</h2>
<p id="questions-empty" hidden></p>
<ul id="questions" class="items" aria-labelledby="questions-title"></ul>
</section>
<article id="approval" aria-labelledby="summary" hidden>
<div id="approval-body">
<h1 id="summary" class="item-text" tabindex="-1"></h1>
<p id="summary-warning" class="warn" hidden></p>
<dl class="facts">
<div><dt>Status</dt><dd id="f-status"></dd></div>
<div><dt>Tool</dt><dd id="f-tool"></dd></div>
<div><dt>Target</dt><dd id="f-target"></dd></div>
<div><dt>Asked by</dt><dd id="f-caller"></dd></div>
<div><dt>Bound to</dt><dd id="f-digest" class="mono"></dd></div>
<div><dt>Host key or endpoint</dt><dd id="f-pinned" class="mono"></dd></div>
<div><dt>Needs approval because</dt><dd id="f-why"></dd></div>
<div><dt>Asked at</dt><dd id="f-created"></dd></div>
<div><dt>Open until</dt><dd id="f-expires"></dd></div>
<div><dt>Log reference</dt><dd id="f-ref" class="mono"></dd></div>
</dl>
<div id="details"></div>
<div id="decide" role="group" aria-label="Decision" hidden>
<button type="button" id="approve" class="approve">Approve</button>
<button type="button" id="reject" class="reject">Reject</button>
</div>
<p id="result" class="status" role="status" aria-live="polite" tabindex="-1" hidden></p>
</div>
</article>
</main>
"#;

/// The inbox page, the same for every path under `/inbox`; `nonce` marks
/// the one inline script and style [`csp`] lets run. Serve it with
/// `Content-Type: text/html; charset=utf-8`, `Content-Security-Policy:
/// csp(nonce)`, `Cache-Control: no-store`, `X-Content-Type-Options: nosniff`.
pub fn inbox(nonce: &str) -> String {
    let script = SCRIPT
        .replace("__NAMES__", &shown::names_json())
        .replace("__WARNINGS__", &shown::warnings_json())
        .replace("__MAX_RUN__", &shown::MAX_RUN.to_string())
        .replace("__RANGES__", &shown::ranges_json())
        .replace("__TOKEN_KEY__", TOKEN_KEY);
    let nonce = escape(nonce);
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>Approvals waiting</title>\n<style nonce=\"{nonce}\">{STYLE}</style>\n</head>\n<body>\n\
         {BODY}<script nonce=\"{nonce}\">{script}</script>\n</body>\n</html>\n"
    )
}

#[cfg(test)]
mod tests;
