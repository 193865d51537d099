"""No typed results in the prose: every number a notebook's Markdown shows is computed.

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

Numbers written as words count too: a ratio word ("doubles", "roughly doubles", "twice", "halves"),
"a hundred times", "several times less", "a few times", a count from four up ("the first nine rows",
"eight misconceptions", "over a hundred kernels", "thousands of cycles"), a count of waves even in small words
("two waves": the wave model computes it), and a magnitude stated against a round unit ("well under a
microsecond"). Two and three stay allowed as words otherwise (the two rules, three units: structure, not results);
a structural count from four up goes on the short :data:`WORD_ALLOWED` list with its reason. The reading pages written in plain MyST Markdown (:data:`MD_PAGES`)
cannot insert numbers, so they are scanned too.
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
         r"[Vv]ersions?|v|[Cc]hapters?|lines?|pages?|[Pp]itfalls?|flash-attn|PyTorch|CUDA|Hopper|Blackwell|FlashAttention-?")
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
}


#: Word numbers from four up (a count a reader could check: "the first nine rows"), then ratio words.
_WORD = (r"four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|"
         r"eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|dozen")
WORD_NUM = re.compile(rf"\b(?:{_WORD})\b(?:[\s-]+[A-Za-z]+)?", re.I)
#: A count of waves is a result even in the words the scanner otherwise allows (two, three): the model computes it.
WORD_WAVES = re.compile(r"\b(?:two|three)\s+waves?\b", re.I)
#: A magnitude written as a comparison with a round unit ("well under a microsecond") states a result without a number.
WORD_MAGNITUDE = re.compile(r"\bwell\s+(?:under|over|below|above)\s+(?:a|an|one)\s+(?:nano|micro|milli)?seconds?\b",
                            re.I)
WORD_RATIO = re.compile(r"\b(?:doubles?|doubled|doubling|triples?|tripled|quadruples?|quadrupled|halves|halved|twice|"
                        r"thrice|hundreds|thousands|dozens)\b|\b(?:a|one|two|three|several|many|some|a few)\s+times\b",
                        re.I)

#: Word counts from four up that name a structure rather than state a result, per page: (phrase, reason).
WORD_ALLOWED: dict[str, list[tuple[str, str]]] = {
    "01_bottlenecks.ipynb": [("both halves", "the section's two parts, not a ratio")],
    "04_flash_forward.ipynb": [("the four tiles", "Eq. (fa-blocks)'s factor 4: Q, K, V, O tiles"),
                               ("the four warps", "input: FlashAttention-2's warps per CTA")],
    "04b_what_limits.ipynb": [("five matmuls", "the backward's structure (S, dV, dP, dQ, dK)")],
    "05b_scheduling_prefill.ipynb": [
        ("four CTAs on four SMs", "input: the hand-sized scheduling example"),
        ("Six CTAs of one to six tiles on four SMs", "input: the second hand-sized example"),
        ("the four shortest", "the hand-sized example's CTAs, counted by the reader"),
        ("five matrix multiplications", "the backward's structure (S, dV, dP, dQ, dK)"),
        ("eight query heads", "input: FlashAttention-4's MQA-8 setting"),
        ("twice the slots", "definition: two resident CTAs per SM give SMs x 2 slots")],
    "06_flash_decoding.ipynb": [("four to sixteen splits", "input: the split counts of the lecture's sweep")],
    "07_fusion.ipynb": [("five separate operators", "the example's structure (max, subtract, exp, sum, divide)"),
                        ("a few thousand", "input: the hidden sizes the kernels are written for")],
    "08_megakernel.ipynb": [("half to double its default", "input: the sensitivity sweep's range"),
                            ("hundreds of steps", "input: how long a schedule is reused")],
    "09_state_of_the_field.ipynb": [("four changes", "the paper's list of FlashAttention-4's changes")],
    "12_exercises.ipynb": [("halves the MMA", "a derivation step of exercise 13's solution"),
                           ("the four shortest", "the CTAs of exercise 14's hand-sized example")],
}

#: Reading pages in plain MyST Markdown (no inline execution): scanned for typed digits and word numbers.
MD_PAGES = ("intro.md", "10_summary.md", "13_further_reading.md", "14_next.md")

#: Digits the Markdown pages may type (inputs), per page: (phrase, reason).
MD_ALLOWED: dict[str, list[tuple[str, str]]] = {
    "10_summary.md": [("about 100 KiB of SRAM", "input: the FlashAttention paper's SRAM size, M = 51,200 elements"),
                      ("batch 1", "the setting the section studies")],
    "13_further_reading.md": [("batch 1", "the setting the section studies")],
    "intro.md": [('"100 KB" of SRAM (51,200 FP16 elements, 102,400 bytes) is written 100 KiB',
                  "the units convention: the paper's SRAM size in its three spellings (an input)"),
                 ("JupyterLab 4.6", "a software version, where its behaviour is described"),
                 ("Python 3", "the kernel's name as JupyterLab lists it")],
}


def word_numbers(markdown: str, allowed=()) -> list[tuple[str, str]]:
    """``(words, context)`` for every number or ratio written in words in ``markdown`` (see the module docstring).

    ``allowed``: ``(phrase, reason)`` pairs whose phrases are blanked first (case-insensitive).
    """
    text = prose(markdown)
    for phrase, _ in allowed:
        text = re.sub(re.escape(phrase), lambda m: " " * len(m.group(0)), text, flags=re.I)
    hits = []
    for rx in (WORD_NUM, WORD_RATIO, WORD_WAVES, WORD_MAGNITUDE):
        hits += [(m.group(0), text[max(0, m.start() - 40):m.end() + 30].replace("\n", " ")) for m in rx.finditer(text)]
    return hits


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


def _report(name: str, what: str, hits) -> str:
    return f"{name}: {what}:\n" + "\n".join(f"  {s!r}: ...{ctx}..." for s, ctx in hits)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_typed_results_in_prose(path):
    hits = typed_numbers(notebook_markdown(path), ALLOWED.get(path.name, ()))
    assert not hits, _report(path.name, "numbers typed into the prose (insert them with {eval} from labcore, "
                                        "or add an input parameter to ALLOWED with its reason)", hits)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_word_numbers_in_prose(path):
    hits = word_numbers(notebook_markdown(path), WORD_ALLOWED.get(path.name, ()))
    assert not hits, _report(path.name, "numbers or ratios written in words (compute them with {eval}, word them "
                                        "without a count, or add a structural count to WORD_ALLOWED with its "
                                        "reason)", hits)


@pytest.mark.parametrize("name", MD_PAGES)
def test_markdown_pages_type_no_results(name):
    md = (BOOK / name).read_text(encoding="utf-8")
    hits = typed_numbers(md, MD_ALLOWED.get(name, ())) + word_numbers(md, WORD_ALLOWED.get(name, ()))
    assert not hits, _report(name, "typed results", hits)
