"""``python -m cow006_workers``: the ``cow006`` command (``cli.main``)."""

from cow006_workers.cli import main

main()
