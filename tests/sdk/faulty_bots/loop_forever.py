"""An infinite loop in play: the host must time out (and keep running the match)."""


def play(view):
    while True:
        pass
