"""The static-HTML exercise graders work in a real browser and agree with flashbook.exercises.check."""
from __future__ import annotations

from bookbrowser import new_offline_page

import flashbook.exercises as E

DOC = "book/12_exercises"


def _grade_in_page(page, number: int, values: dict) -> str:
    form = page.locator(f'form.fb-exercise-form[data-exercise="{number}"]')
    assert form.count() == 1, f"exercise {number}: expected one static form on the page"
    for key, value in values.items():
        form.locator(f'input[data-part="{key}"]').fill(value)
    form.locator("button.fb-check").click()
    return form.locator("pre.fb-verdict").inner_text().strip()


def test_static_forms_agree_with_python_grader(site, browser):
    page = new_offline_page(browser)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(site + DOC + ".html", wait_until="load")
    checked = 0
    for ex in E.EXERCISES:
        pl = E.payload(ex.number)
        numeric = [p for p in pl["parts"] if p["kind"] == "number"]
        if not numeric or len(numeric) != len(pl["parts"]):
            continue                          # multiple-choice parts are covered by the node test
        trials = [{p["key"]: repr(p["ref"]) for p in numeric}]
        for p in numeric[:1]:
            for m in p["mistakes"][:2]:
                trials.append({**trials[0], p["key"]: repr(m["value"])})
        trials.append({p["key"]: "" for p in numeric})
        for values in trials:
            shown = _grade_in_page(page, ex.number, values)
            parsed = {k: (None if v == "" else float(v)) for k, v in values.items()}
            expected = E.grade_payload(pl, parsed).message.strip()
            assert shown == expected, f"exercise {ex.number} with {values}: page says {shown!r}, Python {expected!r}"
            checked += 1
    assert checked >= 20, f"only {checked} static-form trials ran"
    assert errors == [], errors
    page.context.close()


def test_another_variant_shows_and_grades_the_next_variant(site, browser):
    """The "Another variant" button: variant 0 shows no extra text (the page states its numbers), the next
    variant shows its statement and labels, and the form grades against that variant."""
    page = new_offline_page(browser)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(site + DOC + ".html", wait_until="load")
    form = page.locator('form.fb-exercise-form[data-exercise="12"]')
    assert form.locator(".fb-variant-statement").is_hidden()
    form.locator("button.fb-variant").click()
    pl = E.payload(12, 1)
    assert form.locator(".fb-variant-statement").inner_text() == f"Variant 1: {pl['statement']}"
    assert [x.inner_text() for x in form.locator(".fb-label").all()] == [p["label"] for p in pl["parts"]]
    values = {p["key"]: repr(p["ref"]) for p in pl["parts"]}
    values["util128_pct"] = repr(pl["parts"][1]["mistakes"][0]["value"])
    for key, value in values.items():
        form.locator(f'input[data-part="{key}"]').fill(value)
    form.locator("button.fb-check").click()
    expected = E.grade_payload(pl, {k: float(v) for k, v in values.items()}).message.strip()
    assert form.locator("pre.fb-verdict").inner_text().strip() == expected
    assert errors == [], errors
    page.context.close()
