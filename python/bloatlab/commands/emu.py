"""``bloatlab emu cleanup``: remove what killed emulator runs left behind."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("emu", help="emulator maintenance (cleanup)",
                       description="Emulator maintenance. `cleanup` removes the network namespaces "
                                   "(bloatlab-emuN-c/-s), TUN devices, processes and temporary directories "
                                   "(/tmp/bloatlab-emu-PID, /tmp/bloatlab-cli-PID-*) of emulator runs that were killed; "
                                   "those of running emulators are left alone unless --all.")
    verbs = p.add_subparsers(dest="emu_command", metavar="VERB")
    verbs.required = True
    c = verbs.add_parser("cleanup", help="remove what killed emulator runs left behind")
    c.add_argument("--all", action="store_true", help="also those of emulators still running (they will fail)")
    c.set_defaults(func=main)


def main(args) -> int:
    from ..engines import emu

    print(emu.cleanup(all_=args.all), end="")
    return 0
