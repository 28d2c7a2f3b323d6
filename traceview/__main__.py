"""``python -m traceview`` runs the CLI (used on machines where it is not installed)."""

from traceview.cli.app import main

main()
