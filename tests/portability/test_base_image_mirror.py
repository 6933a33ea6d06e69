""".ci/base-image.sh takes the Debian mirror from this machine's apt sources (one-line and deb822 formats), so the
repository names no mirror host. The sources here use reserved example names (RFC 2606)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

# Every test here starts child processes: the fast tier leaves them out (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "base-image.sh"

DEB822 = """\
Types: deb
URIs: http://security.example/debian-security
Suites: bookworm-security
Components: main

Types: deb
# an old snapshot, switched off
URIs: http://old.example/debian
Suites: bookworm
Components: main
Enabled: no

Types: deb deb-src
URIs: http://mirror.example/debian http://second.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


def mirror(apt_etc: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "DEBIAN_MIRROR"} | {"APT_ETC": str(apt_etc)} | env
    return subprocess.run(["bash", str(SCRIPT), "--mirror"], capture_output=True, text=True, env=environ, timeout=30)


def apt_etc(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_deb822_sources_give_the_enabled_bookworm_archive(tmp_path: Path) -> None:
    disabled = "deb http://no.example/debian bookworm main\n"
    etc = apt_etc(tmp_path, {"sources.list.d/debian.sources": DEB822, "sources.list.d/x.list.disabled": disabled})
    assert mirror(etc).stdout == "http://mirror.example/debian\n"


def test_a_one_line_source_with_options_is_read_and_deb_src_is_not(tmp_path: Path) -> None:
    lines = (
        "# deb http://commented.example/debian bookworm main\n"
        "deb-src http://src.example/debian bookworm main\n"
        "deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] https://list.example/debian/ bookworm main contrib\n"
    )
    etc = apt_etc(tmp_path, {"sources.list": lines, "sources.list.d/debian.sources": DEB822})
    assert mirror(etc).stdout == "https://list.example/debian/\n"


def test_without_a_bookworm_source_any_debian_archive_serves(tmp_path: Path) -> None:
    lines = "deb http://tools.example/apt stable main\ndeb http://trixie.example/debian trixie main\n"
    etc = apt_etc(tmp_path, {"sources.list": lines})
    assert mirror(etc).stdout == "http://trixie.example/debian\n"


def test_no_source_fails_in_one_line_naming_the_override(tmp_path: Path) -> None:
    done = mirror(apt_etc(tmp_path, {"sources.list": "deb http://tools.example/apt stable main\n"}))
    assert done.returncode == 1 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert "no Debian mirror" in line and "DEBIAN_MIRROR=URL" in line
    assert mirror(tmp_path, DEBIAN_MIRROR="http://chosen.example/debian").stdout == "http://chosen.example/debian\n"
