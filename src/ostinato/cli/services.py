"""Commands that run Ostinato's services: ``ostinato runner`` and ``ostinato run``."""

from __future__ import annotations
