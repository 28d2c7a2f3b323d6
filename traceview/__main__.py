"""``python -m traceview`` runs the CLI (used on machines where it is not installed),
through the same entry point as the installed command (``cli/entry.py``)."""

from traceview.cli.entry import main

main()
