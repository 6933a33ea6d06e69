"""Every pin of requirements.lock has a wheel for each Python the suite supports, on x86-64 Linux: asked of the
package index pip is configured with, without those interpreters (`pip install --dry-run --python-version X
--only-binary=:all:`), so that no Python package needs a C compiler on any of them.

    python .ci/check_wheels.py [--lock requirements.lock] [--python 3.10 --python 3.12 ...] [--max-age-h 24]

pip evaluates a requirement's environment markers against the interpreter it runs on, whatever --python-version
says, so this script picks each Python's pins itself (the lock's markers, evaluated for that Python) and asks pip for
exactly those, without their dependencies: uv resolved the lock for every Python, so each one's pins are its whole
set. The machine's global constraints file is kept out (PIP_CONSTRAINT=), as it is meant for this machine's Python.

A definite answer (every pin has a wheel, or one has none) is kept for --max-age-h hours (default 24) in the bench's
cache, keyed by the Python and its exact pins, so the suite asks the index once a day at most (about a minute of pip
each run otherwise); `--max-age-h 0` asks again. An index out of reach is never kept.

Exit status: 0 every pin has a wheel; 1 a pin has none (named, with pip's answer); 3 the index could not be reached.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
# glibc 2.35 (Ubuntu 22.04) is the oldest of the systems named in README.md; pip takes the platforms literally
# (manylinux2014 also stands for manylinux2010 and manylinux1).
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(35, 16, -1)] + ["manylinux2014_x86_64"]
UNREACHABLE = (
    "NewConnectionError",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Could not fetch URL",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "ProxyError",
)


def environment(python: str) -> dict[str, str]:
    """The marker environment of CPython `python` on x86-64 Linux."""
    env: dict[str, str] = {key: str(value) for key, value in default_environment().items()}
    env |= {"python_version": python, "python_full_version": f"{python}.0", "implementation_name": "cpython"}
    env |= {"platform_python_implementation": "CPython", "implementation_version": f"{python}.0"}
    env |= {"sys_platform": "linux", "os_name": "posix", "platform_system": "Linux", "platform_machine": "x86_64"}
    return env


def lock_requirements(lock: Path) -> list[Requirement]:
    """The lock's pins (uv writes one per line; indented lines and comments are its annotations)."""
    lines = lock.read_text(encoding="utf-8").splitlines()
    return [Requirement(line.split(" \\")[0]) for line in lines if line and not line[0].isspace() and line[0] != "#"]


def pins_for(requirements: list[Requirement], python: str) -> list[str]:
    env = environment(python)
    chosen = [r for r in requirements if r.marker is None or r.marker.evaluate(env)]
    return [f"{r.name}{r.specifier}" for r in chosen]


def ask_pip(python: str, pins: list[str]) -> tuple[int, str]:
    """pip's exit status and output for installing exactly `pins` on CPython `python`, wheels only."""
    with tempfile.TemporaryDirectory(prefix="agentbench-wheels-") as tmp:
        requirements = Path(tmp) / "requirements.txt"
        requirements.write_text("\n".join(pins) + "\n", encoding="utf-8")
        command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps"]
        command += ["--target", str(Path(tmp) / "target"), "--python-version", python, "--implementation", "cp"]
        command += ["--only-binary=:all:", *(f"--platform={p}" for p in PLATFORMS), "--retries", "1"]
        command += ["--timeout", "30", "--disable-pip-version-check", "-r", str(requirements)]
        env = os.environ | {"PIP_CONSTRAINT": ""}
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        return done.returncode, done.stdout + done.stderr


def answers_folder() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "agent-bench" / "wheel-checks"


def kept_answer(python: str, pins: list[str], max_age_h: float) -> tuple[int, str]:
    """pip's answer for exactly these pins on `python`: a definite one kept from the last `max_age_h` hours, else
    asked now (and kept when definite)."""
    path = answers_folder() / f"{hashlib.sha256(json.dumps([python, sorted(pins)]).encode()).hexdigest()[:24]}.json"
    if max_age_h > 0 and path.is_file() and time.time() - path.stat().st_mtime < max_age_h * 3600:
        kept = json.loads(path.read_text(encoding="utf-8"))
        return int(kept["status"]), str(kept["output"])
    status, output = ask_pip(python, pins)
    if verdict(python, pins, status, output)[0] != 3:  # an index out of reach says nothing of the pins: not kept
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"status": status, "output": output}), encoding="utf-8")
    return status, output


def verdict(python: str, pins: list[str], status: int, output: str) -> tuple[int, str]:
    lines = output.splitlines()
    if status == 0:
        installs = next((line for line in lines if line.startswith("Would install")), "")
        return 0, f"python {python}: {len(pins)} pins, each with a wheel ({len(installs.split()) - 2} would install)"
    unreachable = next((line.strip() for line in lines if any(sign in line for sign in UNREACHABLE)), "")
    if unreachable:
        return 3, f"python {python}: the package index could not be reached: {unreachable[:300]}"
    errors = [line.strip() for line in lines if line.startswith("ERROR")] or lines[-3:]
    return 1, f"python {python}: a pin without a wheel for CPython {python} on x86-64 Linux: {' '.join(errors)[:600]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lock", type=Path, default=ROOT / "requirements.lock")
    parser.add_argument("--python", action="append", choices=PYTHONS, help="default: all of " + ", ".join(PYTHONS))
    parser.add_argument("--max-age-h", type=float, default=24.0, help="reuse an answer this recent (0: ask again)")
    args = parser.parse_args(argv)
    requirements = lock_requirements(args.lock)
    pythons = args.python or list(PYTHONS)
    pins = {python: pins_for(requirements, python) for python in pythons}
    with ThreadPoolExecutor(len(pythons)) as pool:  # the index's answers are waited for, not computed
        asked = pool.map(lambda p: kept_answer(p, pins[p], args.max_age_h), pythons)
        answers = dict(zip(pythons, asked, strict=True))
    worst = 0
    for python in pythons:
        status, line = verdict(python, pins[python], *answers[python])
        print(f"wheels: {line}")
        worst = max(worst, status)
    return worst


if __name__ == "__main__":
    sys.exit(main())
