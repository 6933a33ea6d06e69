"""The program a language's grading runs in the grader (`python3 -I -B -c SOURCE`, bench/score/command_grader.py):
copy the prepared folder to a writable place, run the test command there in a session of its own, with a time
limit, and print its exit status, stdout and stderr apart, and the runner's report file (where the language's runner
writes one, in the home folder), as JSON after a marker line. Standard library only: it
runs in the language's sandbox image, whose python3 is the agent's."""

import contextlib
import json
import os
import shutil
import signal
import subprocess

KEEP = 16 * 1024 * 1024  # characters of each stream kept (their end: a report's last events say how it ended)


def read_report_file(spec: dict) -> str | None:
    """The report file's text, its start kept (a report is read from its beginning); None when there is none."""
    if not spec.get("report_file"):
        return None
    try:
        with open(os.path.join(spec["home"], spec["report_file"]), "rb") as report:
            return report.read(KEEP).decode("utf-8", "replace")
    except OSError:
        return ""


def main() -> None:
    spec = json.loads(os.environ["BENCH_COMMAND_SPEC"])
    shutil.copytree(spec["source"], spec["work"], symlinks=True, dirs_exist_ok=True)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": spec["home"], "LANG": "C.UTF-8", **spec["environment"]}
    child = subprocess.Popen(
        ["sh", "-c", spec["command"]],
        cwd=spec["work"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    timed_out = False
    try:
        out, err = child.communicate(timeout=spec["timeout_s"])
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
    with contextlib.suppress(OSError):
        os.killpg(child.pid, signal.SIGKILL)  # whatever the tests left running
    report = {
        "exit_code": child.returncode,
        "timed_out": timed_out,
        "stdout": out.decode("utf-8", "replace")[-KEEP:],
        "stderr": err.decode("utf-8", "replace")[-KEEP:],
        "report": read_report_file(spec),
    }
    print("\n" + spec["marker"], flush=True)
    print(json.dumps(report), flush=True)


main()
