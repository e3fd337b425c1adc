"""`ptrm` itself (the console script) and `python -m ptrm_cli`: the app, imported here so that
a Ctrl-C while torch and the commands load ends quietly (130), as one later does."""

import sys


def main() -> None:
    try:
        from .app import main as app_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    app_main()


if __name__ == "__main__":
    main()
