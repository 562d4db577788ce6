"""``python -m groundkit`` is ``grk``."""

from groundkit.cli import run

run()
