"""Errors that reach the user as one clear line and exit status 2."""


class UserError(Exception):
    """Bad input: printed as ``error: <message>``, exit status 2, no traceback."""

    exit_code = 2


class ScenarioError(UserError):
    """A scenario key is missing, unknown or out of range. ``key`` is its path
    (``link.down.rate``, ``flow.0.cc``), so the message says where to look."""

    #: a message is cut here, so a 10 MB bad value is not echoed in full
    MAX_MESSAGE = 500

    def __init__(self, key: str, message: str):
        if len(key) > 200:
            key = key[:200] + "..."
        if len(message) > self.MAX_MESSAGE:
            message = message[: self.MAX_MESSAGE] + f"... ({len(message)} characters)"
        self.key = key
        self.message = message
        super().__init__(f"{key}: {message}" if key else message)


class EngineUnavailable(UserError):
    """The engine cannot run here (no root, no /dev/net/tun, binary missing)."""


class EngineFailed(Exception):
    """An engine's process died or failed on its own (killed by a signal, a
    crash): not bad input. Printed as ``error: <message>``; the exit status is
    the engine's own (128 + signal when it was killed, as shells report it)."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


class Interrupted(KeyboardInterrupt):
    """SIGTERM/SIGHUP reached the CLI: handled like Ctrl-C (children stopped,
    temporary files removed), exit status 128 + signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
