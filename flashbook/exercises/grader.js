// The browser grader of flashbook's exercises (lecture §12), used by the static book's forms.
//
// It applies the rules of flashbook.exercises.grade_payload (flashbook/exercises/grader.py) to the same
// JSON payload (flashbook.exercises.payload): a reference value, an absolute tolerance, the known
// mistakes with theirs, and the message templates. tests/test_exercises_js.py runs this file under
// node on the same inputs as the Python grader and asserts identical verdicts.
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

function fbGradeChoice(p, raw, M) {
  var letters = p.options.map(function (o) { return o.letter; });
  var s = (raw === null || raw === undefined) ? '' : String(raw).trim().toUpperCase();
  var pv = {key: p.key, status: null, mistake: null, message: null};
  if (s === '') {
    pv.status = 'empty'; pv.message = fbSub(M.part_empty, {label: p.label});
  } else if (letters.indexOf(s) < 0) {
    pv.status = 'malformed';
    pv.message = fbSub(M.choice_malformed, {label: p.label, letters: letters.join(', ')});
  } else {
    var right, feedback = '';
    if (p.keys) {
      var h = fbDigest(p.salt, s);
      right = p.keys.indexOf(h) >= 0;
      p.mistakes.forEach(function (m) { if (m.keys.indexOf(h) >= 0) { feedback = m.feedback; } });
    } else {
      right = s === p.answer;
      feedback = p.options[letters.indexOf(s)].feedback;
    }
    if (right) {
      pv.status = 'correct'; pv.message = fbSub(M.part_correct, {label: p.label});
    } else {
      pv.status = 'mistake'; pv.mistake = 'option_' + s;
      pv.message = fbSub(M.choice_wrong, {label: p.label, feedback: feedback});
    }
  }
  return pv;
}

function fbGradeNumber(p, raw, M) {
  var x = fbParse(raw);
  var pv = {key: p.key, status: null, mistake: null, message: null};
  if (x === null) {
    pv.status = 'empty'; pv.message = fbSub(M.part_empty, {label: p.label});
    return pv;
  }
  if (typeof x === 'object') {
    pv.status = 'malformed'; pv.message = fbSub(M.part_malformed, {label: p.label});
    return pv;
  }
  if (p.keys) {  // the student edition: salted keys of the rounded answers
    var h = fbDigest(p.salt, fbCanonical(p.rounding, x));
    if (p.keys.indexOf(h) >= 0) {
      pv.status = 'correct'; pv.message = fbSub(M.part_correct, {label: p.label});
      return pv;
    }
    for (var k = 0; k < p.mistakes.length; k++) {
      if (p.mistakes[k].keys.indexOf(h) >= 0) {
        pv.status = 'mistake'; pv.mistake = p.mistakes[k].id;
        pv.message = fbSub(M.part_mistake, {label: p.label, feedback: p.mistakes[k].feedback});
        return pv;
      }
    }
    pv.status = 'wrong'; pv.message = fbSub(M.part_wrong, {label: p.label, rounding: p.rounding_text});
    return pv;
  }
  if (Math.abs(x - p.ref) <= p.tol) {
    pv.status = 'correct'; pv.message = fbSub(M.part_correct, {label: p.label});
    return pv;
  }
  for (var i = 0; i < p.mistakes.length; i++) {
    var m = p.mistakes[i];
    if (Math.abs(x - m.value) <= m.tol) {
      pv.status = 'mistake'; pv.mistake = m.id;
      pv.message = fbSub(M.part_mistake, {label: p.label, feedback: m.feedback});
      return pv;
    }
  }
  pv.status = 'wrong';
  pv.message = fbSub(x > p.ref ? M.part_high : M.part_low, {label: p.label, tol: p.tol_text});
  return pv;
}

// Grade the form's raw strings {part key: text} against a payload -> {exercise, status, parts, message}.
function fbGrade(pl, inputs) {
  var M = pl.messages;
  var pvs = pl.parts.map(function (p) {
    return p.kind === 'choice' ? fbGradeChoice(p, inputs[p.key], M) : fbGradeNumber(p, inputs[p.key], M);
  });
  var st = pvs.map(function (p) { return p.status; });
  function any(s1, s2) { return st.some(function (s) { return s === s1 || s === s2; }); }
  var status, head;
  if (any('mistake', 'wrong')) { status = 'wrong'; head = M.wrong; }
  else if (any('malformed')) { status = 'malformed'; head = M.malformed; }
  else if (st.every(function (s) { return s === 'empty'; })) {
    return {exercise: pl.id, status: 'not_attempted', parts: pvs, message: fbSub(M.not_attempted, {hint: pl.hint})};
  }
  else if (any('empty')) { status = 'incomplete'; head = M.incomplete; }
  else { status = 'correct'; head = M.correct; }
  var name = pl.variant ? pl.title + ', variant ' + pl.variant : pl.title;
  var lines = ['Exercise ' + pl.id + ' (' + name + '): ' + head];
  pvs.forEach(function (p) { lines.push('  ' + p.message); });
  return {exercise: pl.id, status: status, parts: pvs, message: lines.join('\n')};
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
