"""`import labcore` stays light: no matplotlib, no ipywidgets (the presentation layer is lazy)."""
import subprocess
import sys


def test_import_does_not_pull_presentation_layer():
    code = ("import sys, labcore; bad = [m for m in ('matplotlib', 'ipywidgets', 'IPython') if m in sys.modules];"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"import labcore imported {out}"


def test_public_api_is_documented():
    import inspect

    import labcore

    missing = [n for n in dir(labcore) if not n.startswith("_") and (inspect.isfunction(getattr(labcore, n))
               or inspect.isclass(getattr(labcore, n))) and not inspect.getdoc(getattr(labcore, n))]
    assert not missing, f"public names without a docstring: {missing}"


def test_the_engine_imports_no_presentation_library_and_not_flashbook():
    """labcore is the engine: numpy, ml_dtypes and the standard library, never matplotlib, ipywidgets, PIL,
    IPython or the presentation package (read from the source, so a lazy import inside a function counts)."""
    import ast
    from pathlib import Path

    import labcore

    banned = {"matplotlib", "ipywidgets", "PIL", "IPython", "flashbook"}
    found = []
    for path in Path(labcore.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] in banned]
    assert not found, f"labcore imports presentation code: {found}"
