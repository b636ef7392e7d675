"""Peak resident set size of a command, measured from a small launcher process.

    python -S peak_rss.py RESULT_FILE COMMAND [ARGS...]

forks and execs COMMAND (stdin, stdout and stderr passed through), waits for it with wait4, writes
its ru_maxrss in KiB (what /usr/bin/time reports as maximum resident set size) to RESULT_FILE and
exits with its status. Why not wait4 straight from the benchmark: Linux keeps the peak RSS of the
address space a process replaces at exec in the new program's ru_maxrss, and a forked child's
address space starts as a copy of its parent's, so a child of the benchmark process (which holds
ONNX models, hundreds of MiB) would report at least the benchmark's own peak; /bin/true measured
that way reads 313 MiB with a 300 MiB parent. From this launcher the floor is its own few MiB.

The benchmark's side is `start` and `finish`.
"""

import os
import sys


def start(command: list[str], result_file: str, **popen_kwargs):
    """subprocess.Popen of `command` through the launcher; pass the Popen to `finish`."""
    import subprocess

    launcher = [sys.executable, "-S", os.path.abspath(__file__), result_file]
    return subprocess.Popen(launcher + command, **popen_kwargs)


def finish(process, result_file: str) -> int:
    """Waits for the launcher; returns the command's peak RSS in KiB (0 if it could not start)."""
    process.wait()
    try:
        with open(result_file) as f:
            return int(f.read())
    except (OSError, ValueError):
        return 0


def main() -> int:
    result_file, command = sys.argv[1], sys.argv[2:]
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(command[0], command)
        except OSError as error:
            print(f"peak_rss.py: cannot run {command[0]}: {error}", file=sys.stderr)
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    with open(result_file, "w") as f:
        f.write(str(usage.ru_maxrss))
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
