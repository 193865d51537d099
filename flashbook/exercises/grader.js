// The browser grader of flashbook's exercises (lecture §12), used by the static book's forms.
//
// It applies the rules of flashbook.exercises.grade_payload (flashbook/exercises/grader.py) to the same
// JSON payload (flashbook.exercises.payload): a reference value, an absolute tolerance, the known
// mistakes with theirs, and the message templates. tests/test_exercises_js.py runs this file under
// node on the same inputs as the Python grader and asserts identical verdicts.
//
// Dependency-free ES5 so that it runs in any browser without a build step. flashbook/exercises/form.py
// inlines it into every form's script element; as a CommonJS module (node) it exports its functions.
'use strict';

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
  } else if (s === p.answer) {
    pv.status = 'correct'; pv.message = fbSub(M.part_correct, {label: p.label});
  } else {
    var o = p.options[letters.indexOf(s)];
    pv.status = 'mistake'; pv.mistake = 'option_' + o.letter;
    pv.message = fbSub(M.choice_wrong, {label: p.label, feedback: o.feedback});
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
  var lines = ['Exercise ' + pl.id + ' (' + pl.title + '): ' + head];
  pvs.forEach(function (p) { lines.push('  ' + p.message); });
  return {exercise: pl.id, status: status, parts: pvs, message: lines.join('\n')};
}

// Wire one static form (built by flashbook.exercises.static_form): its "Check" button grades the fields.
function fbAttachForm(root) {
  if (!root) { return; }
  var pl = JSON.parse(root.querySelector('script.fb-ex-payload').textContent);
  var out = root.querySelector('.fb-verdict');
  root.querySelector('button.fb-check').addEventListener('click', function (ev) {
    ev.preventDefault();
    var inputs = {};
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
}

if (typeof module !== 'undefined' && module.exports) {
  module.exports = {fbSub: fbSub, fbParse: fbParse, fbGrade: fbGrade, fbAttachForm: fbAttachForm};
}
