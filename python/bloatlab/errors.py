"""Errors that reach the user as one clear line and exit status 2."""


class UserError(Exception):
    """Bad input: printed as ``error: <message>``, exit status 2, no traceback."""

    exit_code = 2


class ScenarioError(UserError):
    """A scenario key is missing, unknown or out of range. ``key`` is its path
    (``link.down.rate``, ``flow.0.cc``), so the message says where to look."""

    def __init__(self, key: str, message: str):
        self.key = key
        self.message = message
        super().__init__(f"{key}: {message}" if key else message)


class EngineUnavailable(UserError):
    """The engine cannot run here (no root, no /dev/net/tun, binary missing)."""
