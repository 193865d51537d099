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


# labcore's source importing no presentation library (a lazy import inside a function counts) is ruff's
# banned-api rule (TID251, pyproject.toml), run by make lint.
