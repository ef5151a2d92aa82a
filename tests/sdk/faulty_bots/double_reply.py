"""Answers every request twice: the second copy is unrequested."""

import _raw


def answer(msg):
    return _raw.lowest(msg) * 2


_raw.serve(answer, "double")
