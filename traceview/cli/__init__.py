"""The command line: ``app`` registers one module per command, nothing more."""
