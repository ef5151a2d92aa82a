"""Raises in play: reported as an error reply, the host records "exception"."""


def play(view):
    raise ValueError(f"no idea what to play with {len(view.hand)} cards")
