"""Every notebook installs labcore on Colab from the one repository setting in _config.yml (a collapsed cell)."""
import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_colab_install_cell_matches_repository_setting():
    repo = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    spec = f"git+{repo['url']}@{repo.get('branch', 'main')}"
    for nb_path in sorted((ROOT / "book").glob("*.ipynb")):
        cells = json.loads(nb_path.read_text())["cells"]
        colab = [c for c in cells if "google.colab" in "".join(c["source"])]
        assert len(colab) == 1, f"{nb_path.name}: needs exactly one Colab install cell"
        src = "".join(colab[0]["source"])
        assert spec in src, f"{nb_path.name}: Colab cell must install {spec}"
        assert "remove-cell" in colab[0]["metadata"].get("tags", []), f"{nb_path.name}: tag the Colab cell remove-cell"
        # JupyterLab and Binder readers see it folded to one line, not as the first thing on the page.
        assert colab[0]["metadata"].get("jupyter", {}).get("source_hidden") is True, \
            f"{nb_path.name}: collapse the Colab cell (metadata jupyter.source_hidden)"
        first_code = next(c for c in cells if c["cell_type"] == "code")
        assert first_code is colab[0], f"{nb_path.name}: the Colab cell must be the first code cell"
