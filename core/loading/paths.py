"""Where bundled files live, resolved relative to the repository so the app runs from any working directory."""
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
ASSETS_DIR = REPO_ROOT / "assets"
CORPORA_DIR = ASSETS_DIR / "corpora"
