"""The examples of docs/rl.md run as written, and its tables match the code."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

rl = pytest.importorskip(
    "cow006.rl", reason="the rl extra is not installed (pip install 'cow006[rl]')"
)

from cow006.rl import obs  # noqa: E402

DOC = Path(__file__).resolve().parents[3] / "docs" / "rl.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.mark.parametrize("code", EXAMPLES, ids=[f"example{i}" for i in range(len(EXAMPLES))])
def test_the_example_runs(code: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(code, str(DOC), "exec"), {})
    assert capsys.readouterr().out.strip()  # each example prints what it shows


def test_there_are_the_three_examples() -> None:
    assert len(EXAMPLES) == 3


def test_the_observation_table_is_the_codes_offsets() -> None:
    rows = re.findall(r"^\| (\d+) \| (\d+) \| ", DOC.read_text(), flags=re.M)
    offsets = [(int(a), int(b)) for a, b in rows]
    assert offsets[0] == (0, 104) and sum(b for _, b in offsets) == obs.N_OBS
    assert [a for a, _ in offsets] == [
        obs.HAND,
        obs.TABLE,
        obs.SEEN,
        obs.CURRENT,
        obs.ROWS,
        obs.SCORES,
        obs.PENALTIES,
        obs.PRESENT,
        obs.MISC,
    ]
    assert all(a + b == c for (a, b), (c, _) in itertools.pairwise(offsets))
