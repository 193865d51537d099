"""book/_ext/flashbook_eval.py: an {eval} role first runs every notebook cell above it (else a number after a hidden cell is lost).

myst-nb's inline execution runs a hidden (``remove-cell``) code cell only when the next shown code cell
renders; without the extension a role right after a hidden cell fails with a NameError in the book build.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
import flashbook_eval  # noqa: E402


class _Client:
    def __init__(self, n_cells):
        self._source_map = [(i + 1) * 10000 + 1 for i in range(n_cells)]   # myst-nb's pseudo source map
        self.ran_up_to = None

    def code_cell_outputs(self, index):
        self.ran_up_to = index


class _Doc(dict):
    pass


class _Role:
    def __init__(self, client, line):
        renderer = type("R", (), {"renderer": type("C", (), {"nb_client": client})()})()
        self.document = _Doc(nb_renderer=renderer)
        self.line = line


def test_role_runs_every_cell_up_to_its_markdown_cell():
    client = _Client(10)
    flashbook_eval._run_cells_above(_Role(client, 70002))      # line 2 of cell index 6
    assert client.ran_up_to == 6


def test_role_outside_a_notebook_is_left_alone():
    role = _Role(_Client(3), None)
    flashbook_eval._run_cells_above(role)
    assert role.document["nb_renderer"].renderer.nb_client.ran_up_to is None
    role.document = _Doc()
    flashbook_eval._run_cells_above(role)      # no renderer: nothing to do, no error


def test_setup_patches_the_eval_role_once():
    from myst_nb.ext.eval import EvalRoleAny

    flashbook_eval.setup(None)
    run = EvalRoleAny.run
    flashbook_eval.setup(None)
    assert EvalRoleAny.run is run and run._flashbook_in_order
