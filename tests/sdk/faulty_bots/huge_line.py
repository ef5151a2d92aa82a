"""Answers with a megabyte of digits and no newline: oversize."""

import time

import _raw


def answer(msg):
    _raw.bot.channel.write(b"1" * (1 << 20))
    time.sleep(60)


_raw.serve(answer, "huge")
