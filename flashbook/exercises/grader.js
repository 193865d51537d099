// The browser grader of flashbook's exercises (lecture §12), used by the static book's forms.
//
// It holds no grading rule of its own: each JSON payload (flashbook.exercises.payload) carries a reference
// value, an absolute tolerance, the known mistakes with theirs, the message templates and the rules
// (flashbook.exercises.grader.GRADING_RULES, the ones the Python grader applies), and this file applies the
// rules it is given: it reads what the reader typed, evaluates the tests the rules name, in their order, and
// fills the templates. tests/test_exercises_js.py runs it under node on the same inputs as the Python grader
// and asserts identical verdicts.
//
// The student edition's payload (flashbook/exercises/keys.py) holds no reference value: each part keeps
// salted SHA-256 keys of the answers rounded as the statement asks. fbCanonical rounds the typed number the
// same way (toFixed / toExponential: the exact binary value, ties away from zero, as Python's Decimal with
// ROUND_HALF_UP) and fbSha256 (FIPS 180-4) hashes it, so both graders compare the same keys.
//
// Dependency-free ES5 so that it runs in any browser without a build step. flashbook/exercises/form.py
// inlines it into every form's script element; as a CommonJS module (node) it exports its functions.
'use strict';

// SHA-256 of a string (UTF-8) as 64 hex digits.
function fbSha256(text) {
  var K = [], H = [], i, j, n = 0, c = 2;
  function frac(x) { return ((x - Math.floor(x)) * 4294967296) | 0; }
  while (n < 64) {  // the first 64 primes: cube roots (K) and, for the first 8, square roots (H)
    for (j = 2; j * j <= c; j++) { if (c % j === 0) { break; } }
    if (j * j > c) { if (n < 8) { H[n] = frac(Math.pow(c, 1 / 2)); } K[n++] = frac(Math.pow(c, 1 / 3)); }
    c++;
  }
  var s = unescape(encodeURIComponent(text)), bytes = [];
  for (i = 0; i < s.length; i++) { bytes.push(s.charCodeAt(i)); }
  var bitLen = bytes.length * 8;
  bytes.push(0x80);
  while (bytes.length % 64 !== 56) { bytes.push(0); }
  for (i = 7; i >= 0; i--) { bytes.push(i >= 4 ? 0 : (bitLen >>> (8 * i)) & 0xff); }
  function rotr(x, r) { return (x >>> r) | (x << (32 - r)); }
  for (var off = 0; off < bytes.length; off += 64) {
    var w = [], a = H[0], b = H[1], cc = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
    for (i = 0; i < 64; i++) {
      if (i < 16) {
        w[i] = (bytes[off + 4 * i] << 24) | (bytes[off + 4 * i + 1] << 16) | (bytes[off + 4 * i + 2] << 8) | bytes[off + 4 * i + 3];
      } else {
        var s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >>> 3);
        var s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >>> 10);
        w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
      }
      var t1 = (h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i]) | 0;
      var t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & cc) ^ (b & cc))) | 0;
      h = g; g = f; f = e; e = (d + t1) | 0; d = cc; cc = b; b = a; a = (t1 + t2) | 0;
    }
    H = [H[0] + a, H[1] + b, H[2] + cc, H[3] + d, H[4] + e, H[5] + f, H[6] + g, H[7] + h].map(function (x) { return x | 0; });
  }
  return H.map(function (x) { return ('00000000' + (x >>> 0).toString(16)).slice(-8); }).join('');
}

// The key of a rounded answer: the first 16 hex digits of SHA-256(salt + '|' + text).
function fbDigest(salt, text) { return fbSha256(salt + '|' + text).slice(0, 16); }

// x rounded as a part asks: ['decimals', k] -> x.toFixed(k); ['digits', k] -> x.toExponential(k - 1); 0 -> '0'.
function fbCanonical(rounding, x) {
  var s = rounding[0] === 'decimals' ? x.toFixed(rounding[1]) : x.toExponential(rounding[1] - 1);
  return Number(s) === 0 ? '0' : s;
}

// Plain "{name}" substitution, the same as the Python grader's (no format specs).
function fbSub(template, kw) {
  var out = template;
  Object.keys(kw).forEach(function (k) { out = out.split('{' + k + '}').join(String(kw[k])); });
  return out;
}

// A form field's text -> a finite number, null (empty: not answered) or {bad: true} (unreadable).
function fbParse(s) {
  if (s === null || s === undefined) { return null; }
  var t = String(s).trim();
  if (t === '') { return null; }
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t)) { return {bad: true}; }
  var x = Number(t);
  return isFinite(x) ? x : {bad: true};
}

// The fields a part's message may name: {label}, {tol}, {rounding}, {letters}, and what a test matched.
function fbFields(p, extra) {
  var out = {label: p.label};
  if (p.tol_text !== undefined) { out.tol = p.tol_text; }
  if (p.rounding_text !== undefined) { out.rounding = p.rounding_text; }
  out.letters = (p.options || []).map(function (o) { return o.letter; }).join(', ');
  Object.keys(extra || {}).forEach(function (k) { if (extra[k] !== undefined) { out[k] = extra[k]; } });
  return out;
}

// Does a rule's test hold for a part's read answer (a number, or a choice's letter)? null if not, else the
// fields it gives the verdict ({mistake, feedback}). The tests are named in the rules (GRADING_RULES).
function fbMatch(test, p, read, R) {
  var i, h;
  if (test === 'always') { return {}; }
  if (p.kind === 'choice') {
    h = p.keys ? fbDigest(p.salt, read) : null;
    var right = p.keys ? p.keys.indexOf(h) >= 0 : read === p.answer;
    if (test === 'answer') { return right ? {} : null; }
    if (test === 'mistake' && !right) {
      var feedback = '';
      if (p.keys) {
        for (i = 0; i < p.mistakes.length; i++) {
          if (p.mistakes[i].keys.indexOf(h) >= 0) { feedback = p.mistakes[i].feedback; break; }
        }
      } else {
        p.options.forEach(function (o) { if (o.letter === read) { feedback = o.feedback; } });
      }
      return {mistake: fbSub(R.choice_mistake, {letter: read}), feedback: feedback};
    }
    return null;
  }
  if (p.keys) {  // the student edition: salted keys of the rounded answers
    h = fbDigest(p.salt, fbCanonical(p.rounding, read));
    if (test === 'answer') { return p.keys.indexOf(h) >= 0 ? {} : null; }
    if (test === 'mistake') {
      for (i = 0; i < p.mistakes.length; i++) {
        if (p.mistakes[i].keys.indexOf(h) >= 0) {
          return {mistake: p.mistakes[i].id, feedback: p.mistakes[i].feedback};
        }
      }
    }
    return null;  // above, below: the reference is not in this payload
  }
  if (test === 'answer') { return Math.abs(read - p.ref) <= p.tol ? {} : null; }
  if (test === 'mistake') {
    for (i = 0; i < p.mistakes.length; i++) {
      if (Math.abs(read - p.mistakes[i].value) <= p.mistakes[i].tol) {
        return {mistake: p.mistakes[i].id, feedback: p.mistakes[i].feedback};
      }
    }
    return null;
  }
  if (test === 'above' || test === 'below') { return (read > p.ref) === (test === 'above') ? {} : null; }
  throw new Error('unknown grading test ' + test);
}

// One part's verdict {key, status, mistake, message} on the form's raw text, by the payload's rules.
function fbGradePart(p, raw, R, M) {
  var pv = {key: p.key, status: null, mistake: null, message: null}, read = null, unread = null;
  if (p.kind === 'choice') {
    var s = (raw === null || raw === undefined) ? '' : String(raw).trim().toUpperCase();
    var letters = p.options.map(function (o) { return o.letter; });
    if (s === '') { unread = R.unread.empty; }
    else if (letters.indexOf(s) < 0) { unread = R.unread.choice; }
    else { read = s; }
  } else {
    var x = fbParse(raw);
    if (x === null) { unread = R.unread.empty; }
    else if (typeof x === 'object') { unread = R.unread.number; }
    else { read = x; }
  }
  if (unread) {
    pv.status = unread[0]; pv.message = fbSub(M[unread[1]], fbFields(p));
    return pv;
  }
  var rules = R[p.kind];
  for (var i = 0; i < rules.length; i++) {
    var got = fbMatch(rules[i][0], p, read, R);
    if (got !== null) {
      pv.status = rules[i][1];
      pv.mistake = got.mistake === undefined ? null : got.mistake;
      pv.message = fbSub(M[rules[i][2]], fbFields(p, {feedback: got.feedback}));
      return pv;
    }
  }
  throw new Error('no grading rule decides part ' + p.key);
}

// Grade the form's raw strings {part key: text} against a payload -> {exercise, status, parts, message}.
function fbGrade(pl, inputs) {
  var M = pl.messages, R = pl.rules;
  var pvs = pl.parts.map(function (p) { return fbGradePart(p, inputs[p.key], R, M); });
  var st = pvs.map(function (p) { return p.status; });
  var rule = null;
  function holds(r) {  // an exercise rule: "any" or "all" of the parts' statuses among r.parts, or "always"
    var has = function (s) { return r.parts.indexOf(s) >= 0; };
    return r.when === 'always' || (r.when === 'any' && st.some(has)) || (r.when === 'all' && st.every(has));
  }
  for (var i = 0; i < R.exercise.length && rule === null; i++) {
    if (holds(R.exercise[i])) { rule = R.exercise[i]; }
  }
  if (rule.message) {
    return {exercise: pl.id, status: rule.status, parts: pvs, message: fbSub(M[rule.message], {hint: pl.hint})};
  }
  var name = pl.variant ? fbSub(M.variant_name, {title: pl.title, variant: pl.variant}) : pl.title;
  var lines = [fbSub(M.headline, {number: pl.id, name: name, head: M[rule.head]})];
  pvs.forEach(function (p) { lines.push('  ' + p.message); });
  return {exercise: pl.id, status: rule.status, parts: pvs, message: lines.join('\n')};
}

// One variant of a form's payload (flashbook.exercises.form_payload): the shared keys joined with entry i.
function fbVariant(fp, i) {
  var out = {};
  Object.keys(fp).forEach(function (k) { if (k !== 'variants') { out[k] = fp[k]; } });
  var v = fp.variants[i];
  Object.keys(v).forEach(function (k) { out[k] = v[k]; });
  return out;
}

// Show variant pl in a form: its statement (hidden for variant 0, whose numbers the page states), its
// worked example, labels and option texts; clear the fields and the verdict.
function fbShowVariant(root, pl) {
  var st = root.querySelector('.fb-variant-statement');
  st.textContent = pl.variant ? 'Variant ' + pl.variant + ': ' + pl.statement : '';
  st.hidden = !pl.variant;
  var ex = root.querySelector('.fb-example');
  if (ex) { ex.textContent = pl.example; }
  pl.parts.forEach(function (p) {
    if (p.kind === 'choice') {
      root.querySelector('fieldset[data-part="' + p.key + '"] legend').textContent = p.label + ':';
      p.options.forEach(function (o) {
        root.querySelector('fieldset[data-part="' + p.key + '"] .fb-option[data-letter="' + o.letter + '"]').textContent = o.text;
      });
      Array.prototype.forEach.call(root.querySelectorAll('input[name="' + root.id + '-' + p.key + '"]'),
                                   function (r) { r.checked = false; });
    } else {
      root.querySelector('[data-part-label="' + p.key + '"] .fb-label').textContent = p.label;
      root.querySelector('input[data-part="' + p.key + '"]').value = '';
    }
  });
  var out = root.querySelector('.fb-verdict');
  out.textContent = '';
  out.removeAttribute('data-status');
}

// Wire one static form (built by flashbook.exercises.static_form): "Check" grades the fields against the
// current variant, "Another variant" moves to the next precomputed one (and back to the page's after the last).
function fbAttachForm(root) {
  if (!root) { return; }
  var fp = JSON.parse(root.querySelector('script.fb-ex-payload').textContent);
  var current = 0;
  var out = root.querySelector('.fb-verdict');
  root.querySelector('button.fb-check').addEventListener('click', function (ev) {
    ev.preventDefault();
    var pl = fbVariant(fp, current), inputs = {};
    pl.parts.forEach(function (p) {
      if (p.kind === 'choice') {
        var c = root.querySelector('input[name="' + root.id + '-' + p.key + '"]:checked');
        inputs[p.key] = c ? c.value : '';
      } else {
        inputs[p.key] = root.querySelector('input[data-part="' + p.key + '"]').value;
      }
    });
    var v = fbGrade(pl, inputs);
    out.textContent = v.message;
    out.setAttribute('data-status', v.status);
  });
  var next = root.querySelector('button.fb-variant');
  if (next) {
    next.addEventListener('click', function (ev) {
      ev.preventDefault();
      current = (current + 1) % fp.variants.length;
      fbShowVariant(root, fbVariant(fp, current));
    });
  }
}

if (typeof module !== 'undefined' && module.exports) {
  module.exports = {fbSub: fbSub, fbParse: fbParse, fbGrade: fbGrade, fbAttachForm: fbAttachForm,
                    fbVariant: fbVariant, fbShowVariant: fbShowVariant, fbSha256: fbSha256, fbDigest: fbDigest,
                    fbCanonical: fbCanonical};
}
