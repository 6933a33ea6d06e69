"""The instruction-set scanner (tests/isa_scan.py) on tiny objects assembled here: it finds each kind of instruction
a native build on an AVX-512/AMX machine holds (the `tilezero %tmm4` that crashed issue 9's machine among them), and
passes the instructions the portable baseline allows."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest
from isa_scan import NOT_CODE, fields, report, scan, scan_file, why_above

pytestmark = pytest.mark.binutils

BASELINE = [
    "vfmadd231ps %ymm0,%ymm1,%ymm2",  # FMA
    "vpaddd %ymm1,%ymm2,%ymm3",  # AVX2
    "vcvtph2ps %xmm0,%ymm1",  # F16C
    "pdep %rax,%rbx,%rcx",  # BMI2
    "vpaddd %ymm13,%ymm14,%ymm15",  # the highest VEX registers
    "ret",
]
ABOVE = {
    "vpaddd %zmm0,%zmm1,%zmm2": "EVEX (AVX-512)",
    "tilezero %tmm4": "AMX",
    "ldtilecfg (%rax)": "AMX",
    "tilerelease": "AMX",
    "kmovw %k1,%eax": "AVX-512 register",  # VEX-encoded, but AVX-512F
    "vpaddd %ymm1,%ymm2,%ymm3{%k1}": "EVEX (AVX-512)",
    "vpternlogd $0xff,%ymm1,%ymm2,%ymm3": "EVEX (AVX-512)",  # AVX-512VL: no zmm, no mask, still EVEX
    "{evex} vpaddd %ymm1,%ymm2,%ymm3": "EVEX (AVX-512)",  # an AVX2 mnemonic in its EVEX encoding
    "{vex} vpdpbusd %ymm0,%ymm1,%ymm2": "VEX above AVX2",  # AVX-VNNI
}


def assemble(tmp_path: Path, lines: list[str], name: str = "probe") -> Path:
    source, obj = tmp_path / f"{name}.s", tmp_path / f"{name}.o"
    source.write_text(".text\n" + "\n".join(lines) + "\n")
    subprocess.run(["as", str(source), "-o", str(obj)], check=True)
    return obj


@pytest.mark.parametrize("instruction", sorted(ABOVE))
def test_each_instruction_above_avx2_is_found_and_named(tmp_path: Path, instruction: str) -> None:
    result = scan_file(assemble(tmp_path, [*BASELINE, instruction]))
    assert result.instructions == len(BASELINE) + 1
    assert dict(result.above) == {ABOVE[instruction]: 1}
    assert ABOVE[instruction] in result.examples[0]


def test_the_portable_baseline_passes(tmp_path: Path) -> None:
    result = scan_file(assemble(tmp_path, BASELINE))
    assert result.instructions == len(BASELINE) and not result.above


def test_a_folder_is_scanned_file_by_file_and_non_elf_files_are_left_out(tmp_path: Path) -> None:
    clean = assemble(tmp_path, BASELINE, "libclean")
    native = assemble(tmp_path, ["vpaddd %zmm0,%zmm1,%zmm2", "tilezero %tmm4"], "libnative")
    (tmp_path / "_symlinks.json").write_text("{}")
    scans = scan([tmp_path])
    assert [s.path for s in scans] == [clean, native]
    text = report(scans)
    assert text.splitlines()[0] == f"2 ELF files, {len(BASELINE) + 2} instructions, 2 above the AVX2 baseline"
    assert "libnative.o: 2 instructions, 1 AMX, 1 EVEX (AVX-512)" in text and "tilezero %tmm4" in text


def test_the_fast_scan_judges_as_the_line_by_line_reading_of_objdump(tmp_path: Path) -> None:
    """scan_file counts by one regular expression and judges only the lines its hints find: on an object with every
    kind above the baseline, an EVEX instruction behind a legacy prefix, and bytes objdump cannot decode, it finds
    what reading objdump's output line by line (fields, NOT_CODE, why_above) finds."""
    lines = [*BASELINE, *sorted(ABOVE), "addr32 vpaddd (%eax),%zmm1,%zmm2", ".byte 0x62, 0xff, 0xff", *BASELINE]
    obj = assemble(tmp_path, lines)
    printed = subprocess.run(
        ["objdump", "-d", "--no-addresses", "--insn-width=15", str(obj)], capture_output=True, text=True, check=True
    ).stdout
    code = [f for f in map(fields, printed.splitlines()) if f and not f[1].startswith(NOT_CODE)]
    reasons = [why for why in (why_above(*f) for f in code) if why]
    result = scan_file(obj)
    assert result.instructions == len(code) and sum(result.above.values()) == len(reasons) == len(ABOVE) + 1
    assert result.above == Counter(reasons) and result.examples[0].startswith(code[len(BASELINE)][1])
    assert "(bad)" in printed or ".byte" in printed  # the undecodable bytes were there to be left out
