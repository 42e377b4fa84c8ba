"""Shared test fixtures. The repository root is on sys.path via rootdir conftest placement."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# Tests never reach the Hub: loading code is exercised with checkpoints written into tmp_path and with packaged weights.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
