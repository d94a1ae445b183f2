"""Error types that the CLI turns into one line on stderr and an exit code."""


class UsageError(Exception):
    """Bad input (options, files, specs): exit code 2, one clear line, no traceback."""

    exit_code = 2
