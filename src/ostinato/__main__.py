"""``python -m ostinato``: the same as the ``ostinato`` command."""

from .cli import main

main()
