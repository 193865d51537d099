"""No typed results in the prose (issue 13): every number a notebook's Markdown shows is computed.

The book promises that every number on its pages is computed by ``labcore`` and inserted into the prose
(``{eval}`` roles), never typed. This test reads every notebook's Markdown and fails on a digit that is not

- inside an inline role (``{eval}``, ``{cite}``, ``{doc}``, ``{ref}``, ...), inline code or a link;
- inside math (``$...$``, ``$$...$$``, ``\\begin{...}``): a formula's constants, and names of sizes;
- a section / equation / exercise / algorithm / table / figure / theorem number, or a numbered-list marker;
- a year (19xx, 20xx) or a version number (``flash-attn 2.5.7``, ``PyTorch 2``);
- part of a name: H100, FP16, Llama-3.1-8B, 2-CTA, 16-row, GPT-2 (a digit glued to letters or a hyphen);
- in an exercise statement (its problem's data; the solutions are checked);
- an input parameter on the short per-notebook :data:`ALLOWED` list, each with its reason.

A result (a time, a ratio, a percentage, a published figure) must come from ``labcore`` (published ones
from :mod:`labcore.published`) through an ``{eval}`` role, or be worded without a number.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"

ROLE = re.compile(r"\{[a-z:\-]+\}`[^`]*`")            # {eval}`...`, {cite}`...`, {doc}`...`, {ref}`...`
CODE = re.compile(r"``[^`\n]+``|`[^`\n]*`")
DMATH = re.compile(r"\$\$.*?\$\$(\s*\([\w-]+\))?", re.S)
IMATH = re.compile(r"\$[^$\n]+\$")
ENV = re.compile(r"\\begin\{(\w+\*?)\}.*?\\end\{\1\}", re.S)
#: an exercise statement gives its problem's data (inputs by nature); its solution is checked like prose
EXERCISE = re.compile(r"^```\{exercise\}.*?^```[ \t]*$", re.S | re.M)
FENCE_LINE = re.compile(r"^\s*(```|:::).*$", re.M)
LINK = re.compile(r"\]\([^)]*\)|<https?://[^>]*>|https?://\S+")
DIRECTIVE_OPT = re.compile(r"^\s*:[a-z-]+:.*$", re.M)
HEADING_NUM = re.compile(r"^(#+)\s+§?[\d.]+[a-z]?\s", re.M)
LIST_NUM = re.compile(r"^(\s*(?:\*\*)?)\d+\.(?=\s)", re.M)
LABEL = re.compile(r"^\([\w-]+\)=\s*$", re.M)
NUM = re.compile(r"(?<![\w.\-/§^])(\d[\d,]*(?:\.\d+)?)(?:[xX×]|[kKM](?=\s))?(?![\w\-]|\.\d)")
#: words after which a number names a thing rather than stating a result (an optional list may follow:
#: "exercises 8–10", "Tables 1 and 3", "Algorithms 0 and 3")
NAMED = (r"§|Sections?|sections?|Eqs?\.|Equations?|equations?|Algorithms?|algorithms?|Theorems?|theorem|"
         r"Propositions?|Lemma|[Ee]xercises?|Figures?|Figs?\.|Tables?|table|[Ss]teps?|[Ll]ectures?|Parts?|"
         r"[Vv]ersions?|v|[Cc]hapters?|lines?|pages?|flash-attn|PyTorch|CUDA|Hopper|Blackwell|FlashAttention-?")
CONTEXT_OK = re.compile(rf"(?:{NAMED})\s*(?:[\d.]+\s*(?:,|and|or|to|–|-)\s*)*$")
YEAR = re.compile(r"(19|20)\d\d")

#: Input parameters a notebook's prose may type (a problem's shape, a model's published configuration):
#: per notebook, (phrase as written, reason). The phrase is blanked before the scan. Results never go here.
ALLOWED: dict[str, list[tuple[str, str]]] = {
    "03_online_softmax.ipynb": [("A row of 3,000 scores cut at random into 12 pieces",
                                 "input: the merge explorer's row and piece count, as in the lecture")],
    "01_bottlenecks.ipynb": [("batch size 1", "the setting the section studies")],
    "04b_what_limits.ipynb": [
        ("(in log base 2)", "a formula's base, FlashAttention-4's rescaling rule"),
        ("block of 128 queries", "input: the kernels' query tile"),
        ("hidden size 2048, 16k tokens", "input: the papers' benchmark shape"),
        ("within ±15%", "the tolerance the model was set before the check (an acceptance criterion)"),
        ("short of the 80% set as the goal", "the share of bars the model was set to match"),
        ("32k tokens", "input: a sequence length of the published bars"),
        ("512 tokens", "input: a sequence length of the published bars"),
        ("16k tokens", "input: a sequence length of the published bars"),
    ],
    "05_flash_backward.ipynb": [
        ("For 32 attention matrices", "input: the lecture's example count of attention matrices"),
        ("16 heads, batch 64", "input: the paper's Fig. 2 shape (GPT-2 medium's config, batch 64)"),
    ],
    "06_flash_decoding.ipynb": [
        ("batch 1", "input: the flash-decoding post's setting"),
        ("Batch 1 at 64K", "input: a row of the post's benchmark table"),
        ("batch 64", "input: rows of the post's benchmark table"),
        ("at 64K and", "input: sequence lengths of the post's benchmark table"),
        ("at 128K", "input: a sequence length (the post's table; §6.4's Llama-3.1-8B example)"),
        ("2K keys", "input: §6.4's sweep"),
        ("split over 4 GPUs: 16 query heads and 2 KV heads per GPU", "input: CodeLlama-34B's config / 4"),
        ("(32 query heads, 8 KV heads", "input: Llama-3.1-8B's config"),
        ("cut into 1, 7, 64 and 1000 splits", "input: the split counts the oracle check uses"),
        ("32 splits", "input: a split count of the sweep"),
        ("64 splits", "input: a split count of the sweep"),
    ],
    "08_megakernel.ipynb": [("batch 1", "the setting the section studies")],
    "09_state_of_the_field.ipynb": [
        ("batch 1", "the setting the section studies"),
        ("a batch of at least 128 requests", "input: the setting of FlashInfer's cascade benchmark"),
        ("at a 512K context", "input: the context length of LeanAttention's largest case"),
        ("finishes 65,536 ShareGPT prompts", "input: the workload of Hazy's throughput benchmark"),
    ],
    "12_exercises.ipynb": [("With 64 CTAs", "input: a CTA count of exercise 8"),
                           ("With 128 CTAs", "input: a CTA count of exercise 8"),
                           ("The 16 CTAs", "input: a CTA count of exercise 8"),
                           ("on 16 SMs", "input: a CTA count of exercise 8")],
}


def strip(text: str) -> str:
    """The Markdown with everything that may hold digits legitimately blanked out."""
    for rx in (EXERCISE, FENCE_LINE, DMATH, ENV, ROLE, CODE, IMATH, LINK, DIRECTIVE_OPT, LABEL):
        text = rx.sub(" ", text)
    text = HEADING_NUM.sub(r"\1 ", text)
    return LIST_NUM.sub(r"\1 ", text)


def prose(markdown: str) -> str:
    """:func:`strip`, with wrapped lines joined (so an allowed phrase matches across a line break)."""
    return re.sub(r"[ \t]*\n[ \t]*(?!\n)", " ", strip(markdown))


def typed_numbers(markdown: str, allowed=()) -> list[tuple[str, str]]:
    """``(number, context)`` for every digit in ``markdown`` that looks like a typed result.

    ``allowed``: ``(phrase, reason)`` pairs whose phrases are blanked first.
    """
    text = prose(markdown)
    for phrase, _ in allowed:
        text = text.replace(phrase, " " * len(phrase))
    hits = []
    for m in NUM.finditer(text):
        s = m.group(1).rstrip(",")
        if YEAR.fullmatch(s) or CONTEXT_OK.search(text[max(0, m.start() - 40):m.start()]):
            continue
        hits.append((s, text[max(0, m.start() - 40):m.end() + 30].replace("\n", " ")))
    return hits


def notebook_markdown(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_typed_results_in_prose(path):
    hits = typed_numbers(notebook_markdown(path), ALLOWED.get(path.name, ()))
    assert not hits, (f"{path.name}: numbers typed into the prose (insert them with {{eval}} from labcore, "
                      "or add an input parameter to ALLOWED with its reason):\n" +
                      "\n".join(f"  {s!r}: ...{ctx}..." for s, ctx in hits))


def test_allow_list_is_short_and_explained():
    assert sum(len(v) for v in ALLOWED.values()) <= 32
    assert all(reason.strip() and re.search(r"\d", phrase) for v in ALLOWED.values() for phrase, reason in v)
    assert set(ALLOWED) <= {p.name for p in NOTEBOOKS}
    for name, entries in ALLOWED.items():      # no stale entry: each phrase is still in its notebook
        md = prose(notebook_markdown(BOOK / name))
        assert all(phrase in md for phrase, _ in entries), name


def test_scanner_catches_a_typed_result(tmp_path):
    """A synthetic section with one typed result fails; the same sentence with a computed insertion passes."""
    typed = "## 6.4 Splits\n\nFour to sixteen splits bring it to about 100 µs (see §6.3 and Eq. {eq}`x`).\n"
    computed = "## 6.4 Splits\n\nFour to sixteen splits bring it to {eval}`f\"{t_us:.0f}\"` µs (see §6.3).\n"
    assert [s for s, _ in typed_numbers(typed)] == ["100"]
    assert typed_numbers(computed) == []
    # and through the notebook reader, as the real test sees it
    nb = {"cells": [{"cell_type": "markdown", "source": [typed]}, {"cell_type": "code", "source": ["x = 100"]}]}
    tmp = tmp_path / "99_synthetic.ipynb"
    tmp.write_text(json.dumps(nb), encoding="utf-8")
    assert [s for s, _ in typed_numbers(notebook_markdown(tmp))] == ["100"]


@pytest.mark.parametrize("ok", [
    "Exercises 8–10 of the lecture", "the paper's Tables 1 and 3", "flash-attn 2.5.7 doubles it",
    "on an H100 in FP16", "Llama-3.1-8B and GPT-2 medium", "in 2025, FlashMLA", "$N = 4096$ keys",
    "a 2-CTA MMA", "see §6.4", "1. **First.** item", "{eval}`f\"{x:.1f}\"`% of peak",
])
def test_scanner_allows_names_and_formulas(ok):
    assert typed_numbers(ok) == []


@pytest.mark.parametrize("bad", ["within 12% of the measurement", "about 2x faster", "takes 4.8 ms",
                                 "the 20 leftover CTAs", "up to 740 TFLOP/s"])
def test_scanner_flags_results(bad):
    assert typed_numbers(bad) != []
