"""What a user mistake is: a UsageError, said in one line on stderr, ends the command with
exit status USAGE_ERROR (as argparse does), never a traceback."""

USAGE_ERROR = 2


class UsageError(Exception):
    """A mistake in what the user asked for."""
