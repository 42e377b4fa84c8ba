"""Training runs at the sliders' maxima end within 120 s (issue 21 §1): wall time of each trainer, end to end.

Calls the tabs' handlers as the app does (word2vec: skip-gram, 200 dimensions, window 10, 10 epochs, min count 1
on Moby-Dick; RNN/LSTM: word level, 5,000 steps, the time-limit slider at its maximum) and prints the wall time from
the click to the returned model, the steps done and why the run stopped.

    python benchmarks/training_budget.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

GOAL_SECONDS = 120


def quiet(*args, **kwargs) -> None:
    pass


def main() -> int:
    import torch

    torch.set_num_threads(1)
    from core.loading import jobs
    from demo.embeddings import embeddings
    from demo.recurrent import lstm

    rows = []
    start = time.perf_counter()
    _, summary, model = embeddings.train(embeddings.MOBY, None, embeddings.SKIPGRAM, 200, 10, 10, 1, progress=quiet)
    rows.append(("word2vec skip-gram 200d w10 10 epochs min 1", time.perf_counter() - start,
                 f"{model.loss_steps[-1]:,} of {model.steps_planned:,} steps", model.stopped or "finished"))
    start = time.perf_counter()
    *_, (_, badge, models) = list(lstm.train_models("word", 5000, jobs.TRAIN_SECONDS, progress=quiet))
    rows.append(("RNN+LSTM word level 5000 steps", time.perf_counter() - start,
                 f"{models.info['lstm']['steps']:,} of 5,000 steps",
                 "budget" if "Stopped after" in badge else "finished"))
    print(f"{'run at the sliders maxima':<46} {'wall s':>8}  {'work':<26} stopped by")
    for name, seconds, work, reason in rows:
        print(f"{name:<46} {seconds:>8.1f}  {work:<26} {reason}")
    ok = all(seconds <= GOAL_SECONDS for _, seconds, _, _ in rows)
    print(f"goal: each ≤ {GOAL_SECONDS} s on 2 cores: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
