"""The ``bloatlab`` command. Each verb lives in ``commands/<verb>.py`` with
``register(subparsers)`` and ``main(args) -> int``; add a verb by adding a file
and naming it in ``COMMANDS``."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys

from ._version import __version__
from .errors import EngineFailed, Interrupted, UserError

COMMANDS = ["run", "probe", "shell", "emu", "compare", "fidelity", "sweep", "query", "store", "plot", "report", "reproduce", "measure", "advise", "host",
            "scenarios", "qdiscs", "ccs"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own errors: same shape as ours, exit 2
        self.print_usage(sys.stderr)
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)


def parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with ``only`` just that verb (what parsing
    ``bloatlab VERB ...`` needs: the other verbs' modules are not imported)."""
    p = _Parser(prog="bloatlab", description="A laboratory for congestion control and bufferbloat.")
    p.add_argument("--version", action="version", version=f"bloatlab {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in [only] if only in COMMANDS else COMMANDS:
        importlib.import_module(f".commands.{name}", __package__).register(sub)
    return p


def _stop_on_terminate() -> None:
    """SIGTERM and SIGHUP unwind like Ctrl-C, so that children are stopped and
    temporary files removed on the way out (errors.Interrupted)."""

    me = os.getpid()

    def raise_interrupted(signum, _frame):
        if os.getpid() != me:  # a forked worker (sweeps): die as it would have without us
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise Interrupted(signum)

    for s in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(s, raise_interrupted)
        except ValueError:  # not the main thread (main() called from a library thread)
            pass


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # the program itself (not a library call): own its signals
        _stop_on_terminate()
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv[:1] == ["probe"]:  # pass everything through to bloatlab-probe, --help included
            from .commands import probe

            return probe.main(argparse.Namespace(args=argv[1:]))
        p = parser(only=argv[0] if argv else None)
        args, extra = p.parse_known_args(argv)
        if extra:
            # `query DIR --import FILE 'SELECT ...'`: argparse gives both positionals their values at DIR
            # (the SQL none) and leaves the SQL over after the option; take it as the SQL, as other orders do
            if argv[0] == "query" and getattr(args, "sql", "") is None and len(extra) == 1 and not extra[0].startswith("-"):
                args.sql = extra[0]
            else:
                p.error(f"unrecognized arguments: {' '.join(extra)}")
        return int(args.func(args) or 0)
    except (UserError, EngineFailed) as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:
        signum = e.signum if isinstance(e, Interrupted) else signal.SIGINT
        what = " ".join(["bloatlab"] + argv[:1])
        print(f"interrupted by {signal.Signals(signum).name}: {what} stopped", file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:
        return 0
    except OSError as e:
        # the file system refused (read-only, full, a dangling link, a loop, /proc): the
        # environment's doing, not a bug of ours; name the path and the cause (the writers are
        # atomic, so nothing half-written is left under the final name)
        if e.filename is None or os.environ.get("BLOATLAB_DEBUG"):
            if os.environ.get("BLOATLAB_DEBUG"):
                raise
            print(f"internal error: {type(e).__name__}: {e} (set BLOATLAB_DEBUG=1 for the traceback)", file=sys.stderr)
            return 1
        where = e.filename if e.filename2 is None else f"{e.filename} -> {e.filename2}"
        print(f"error: {where}: {e.strerror or e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:
        extra = _extra_of(e.name)
        if extra is None or os.environ.get("BLOATLAB_DEBUG"):
            if os.environ.get("BLOATLAB_DEBUG"):
                raise
            print(f"internal error: {type(e).__name__}: {e} (set BLOATLAB_DEBUG=1 for the traceback)", file=sys.stderr)
            return 1
        what = " ".join(["bloatlab"] + argv[:1])
        print(f"error: {what} needs the optional '{extra}' dependencies ({e.name} is not installed): "
              f"pip install 'bloatlab[{extra}]'", file=sys.stderr)
        return 2
    except Exception as e:  # a bug of ours: say so in one line unless asked for the traceback
        if os.environ.get("BLOATLAB_DEBUG"):
            raise
        print(f"internal error: {type(e).__name__}: {e} (set BLOATLAB_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1


#: a distribution whose import name differs from it
_IMPORT_NAMES = {"scikit-learn": "sklearn"}


def _extra_of(module: str | None) -> str | None:
    """The optional extra of bloatlab's package metadata (pyproject.toml's
    ``[project.optional-dependencies]``) that brings ``module``, if any."""
    import re
    from importlib import metadata

    if not module:
        return None
    top = module.split(".")[0]
    try:
        reqs = metadata.requires("bloatlab") or []
    except metadata.PackageNotFoundError:
        return None
    for r in reqs:
        m = re.match(r"\s*([A-Za-z0-9_.-]+)(?:\[([^\]]*)\])?[^;]*;.*extra\s*==\s*[\"']([^\"']+)[\"']", r)
        if not m:
            continue
        name, sub, extra = m.group(1).lower(), m.group(2), m.group(3)
        names = {_IMPORT_NAMES.get(name, name.replace("-", "_"))} | {x.strip() for x in (sub or "").split(",") if x.strip()}
        if top in names:
            return extra
    return None


if __name__ == "__main__":
    sys.exit(main())
