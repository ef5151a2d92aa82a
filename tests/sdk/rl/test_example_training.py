"""examples/rl: the training script in its tiny configuration makes a bot ``cow006 match`` plays.

The bot is a separate process, run by the real ``cow006`` command (unsandboxed, as a local
match of your own bot runs); it imports numpy, which a bot process finds among the bot
libraries (docs/sandbox.md, "Bot libraries").
"""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest

rl = pytest.importorskip(
    "cow006.rl", reason="the rl extra is not installed (pip install 'cow006[rl]')"
)

import numpy as np  # noqa: E402

from cow006 import log as match_log  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "rl"
SCRIPT = Path(sys.executable).with_name("cow006")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "cow006"]


def _train_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rl_example_train", EXAMPLE / "train.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bot folder trained by ``train.py --tiny`` (a few seconds)."""
    out = tmp_path_factory.mktemp("rl-bot")
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE / "train.py"), "--tiny", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return out


def test_tiny_training_writes_a_bot_folder_and_its_curve(trained: Path) -> None:
    assert (trained / "bot.py").read_text() == (EXAMPLE / "bot.py").read_text()
    with np.load(trained / "weights.npz") as weights:
        assert sorted(weights.files) == ["b1", "b2", "w1", "w2"]
        assert all(np.isfinite(weights[k]).all() for k in weights.files)
        assert weights["w1"].shape == (20, 32)
        # trained: not the network the same seed starts from
        start = _train_module().init_params(np.random.default_rng(1), 32)
        assert not np.array_equal(weights["w1"], start["w1"])
    with open(trained / "curve.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["phase"] for r in rows] == ["start", "imitate", "reinforce"]
    assert [int(r["matches"]) for r in rows] == [0, 4, 8]
    assert all(0.0 <= float(r["win_rate"]) <= 1.0 for r in rows)


def test_training_is_seeded(trained: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE / "train.py"), "--tiny", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    with np.load(trained / "weights.npz") as a, np.load(tmp_path / "weights.npz") as b:
        assert all(np.array_equal(a[k], b[k]) for k in a.files)


def test_cow006_match_plays_the_trained_bot(trained: Path, tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    argv = ["match", str(trained), "builtin:greedy", "builtin:greedy", "builtin:greedy"]
    proc = subprocess.run(
        [*COMMAND, *argv, "--seed", "3", "--no-sandbox", "-q", "--log", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "No module named 'numpy'" not in proc.stderr, (
        "bot processes find no numpy: make venv installs the bot libraries (docs/sandbox.md)"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    log = json.loads(path.read_text())
    assert log["players"][0]["agent"] == str(trained)
    assert log["faults"] == [] and log["forfeited"] == []  # every card its own, none late
    match_log.verify(log)
    verify = subprocess.run([*COMMAND, "verify", str(path)], capture_output=True, text=True)
    assert verify.stdout.strip() == "ok 1 logs", verify.stdout + verify.stderr


def test_plot_curve_draws_the_csv(trained: Path, tmp_path: Path) -> None:
    out = tmp_path / "curve.svg"
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE / "plot_curve.py"), str(trained / "curve.csv"), str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    root = ET.parse(out).getroot()
    lines = root.findall("{http://www.w3.org/2000/svg}polyline")
    # parity, the bot's win rate, greedy's and the bot's heads, two legend swatches
    assert len(lines) == 6
    win = lines[1].get("points", "").split()
    assert len(win) == 3  # one point per row of curve.csv
