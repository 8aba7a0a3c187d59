"""The command line: one module per sub-command, each with `register(subparsers)`."""
