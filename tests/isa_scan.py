"""Which x86-64 instructions in a binary lie above the AVX2 baseline of the portable llama.cpp build (issue 9).

objdump (Debian binutils) disassembles each file. An instruction is above the baseline when it is
- EVEX-encoded (AVX-512 of any width): its first byte after legacy prefixes is 0x62, which means nothing else in
  64-bit code;
- names an AVX-512 register: %zmm*, the mask registers %k0-%k7 (also VEX-encoded kmov*), %xmm16-31/%ymm16-31;
- AMX: a %tmm tile register or tile configuration (ldtilecfg, sttilecfg, tilerelease);
- a VEX-encoded extension newer than AVX2 (AVX-VNNI and its INT8/INT16 kin, AVX-IFMA, AVX-NE-CONVERT).
A native build on a CPU reporting AVX-512 or AMX holds these; the baseline build must hold none.

Run as a script to print the report: .venv/bin/python tests/isa_scan.py FILE_OR_FOLDER...
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

LEGACY_PREFIXES = {0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x66, 0x67, 0xF0, 0xF2, 0xF3}
EVEX = 0x62
RULES = {
    "AVX-512 register": re.compile(r"%zmm\d+|%k[0-7]\b|%[xy]mm(1[6-9]|2\d|3[01])\b"),
    "AMX": re.compile(r"%tmm\d|^(ldtilecfg|sttilecfg|tilerelease)\b"),
    "VEX above AVX2": re.compile(r"^(\{vex\} |vpdp\w+|vpmadd52\w+|vcvtne\w+|vbcstne\w+)"),
}
NOT_CODE = (".byte", "(bad)")  # bytes objdump could not decode (data, padding): not counted, not judged
# The lines fields() accepts: a tab, the bytes, a tab, the text.
INSTRUCTION_LINE = re.compile(r"^\t[^\t\n]*\t[^\t\n]*$", re.MULTILINE)
NOT_CODE_HINTS = tuple(re.compile(re.escape(start)) for start in NOT_CODE)
# Every line why_above() could judge above the baseline holds one of these (more lines may: each is judged). Three
# searches, each led by a literal, take a tenth of the time of one alternation of them all.
HINTS = (
    re.compile(r"%(?:zmm|k[0-7]|[xy]mm[123]\d|tmm)"),
    re.compile(r"\t *(?:(?:" + "|".join(f"{b:02x}" for b in sorted(LEGACY_PREFIXES)) + r") +)*62 "),
    re.compile(r"\t *(?:ldtilecfg|sttilecfg|tilerelease|\{vex\} |vpdp|vpmadd52|vcvtne|vbcstne)"),
)


@dataclass
class FileScan:
    path: Path
    instructions: int = 0
    above: Counter[str] = field(default_factory=Counter)  # reason -> how many instructions
    examples: list[str] = field(default_factory=list)  # the first few, as objdump prints them

    def line(self) -> str:
        found = ", ".join(f"{n} {reason}" for reason, n in sorted(self.above.items())) or "none above AVX2"
        return f"{self.path.name}: {self.instructions} instructions, {found}"


def is_elf(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def why_above(raw: str, asm: str) -> str | None:
    """The reason an instruction (its bytes in hex, its text) is above the AVX2 baseline; None when it is not."""
    opcode = next((b for b in (int(x, 16) for x in raw.split()) if b not in LEGACY_PREFIXES), None)
    if opcode == EVEX:
        return "EVEX (AVX-512)"
    for reason, pattern in RULES.items():
        if pattern.search(asm):
            return reason
    return None


def fields(line: str) -> tuple[str, str] | None:
    """An instruction line's bytes and text; None for headers, symbol names and blank lines."""
    parts = line.split("\t")
    return (parts[1].strip(), parts[2].strip()) if len(parts) == 3 and not parts[0] else None


def lines_holding(text: str, patterns: tuple[re.Pattern[str], ...]) -> list[str]:
    """The lines of `text` where any of `patterns` matches, each once, in order."""
    starts = {text.rfind("\n", 0, m.start()) + 1 for pattern in patterns for m in pattern.finditer(text)}
    return [text[start:end] for start in sorted(starts) for end in [text.find("\n", start) % (len(text) + 1)]]


def scan_file(path: Path, keep_examples: int = 5) -> FileScan:
    """A build holds millions of instructions: they are counted by a regular expression over objdump's whole output,
    and only the few lines that HINTS or NOT_CODE_HINTS find are split and judged one by one."""
    # --insn-width=15: each instruction's bytes on one line (the EVEX test reads them).
    cmd = ["objdump", "-d", "--no-addresses", "--insn-width=15", str(path)]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"objdump -d {path} failed with status {done.returncode}")
    text = done.stdout.decode(errors="replace")
    not_code = [f for f in map(fields, lines_holding(text, NOT_CODE_HINTS)) if f and f[1].startswith(NOT_CODE)]
    result = FileScan(path, instructions=len(INSTRUCTION_LINE.findall(text)) - len(not_code))
    for found in map(fields, lines_holding(text, HINTS)):
        reason = found and not found[1].startswith(NOT_CODE) and why_above(*found)
        if found and reason:
            result.above[reason] += 1
            if len(result.examples) < keep_examples:
                result.examples.append(f"{found[1]}  [{reason}]")
    return result


def scan(paths: list[Path]) -> list[FileScan]:
    """Every ELF file among `paths` (folders: their files, not recursively), scanned."""
    files = [f for p in paths for f in (sorted(p.iterdir()) if p.is_dir() else [p])]
    return [scan_file(f) for f in files if f.is_file() and not f.is_symlink() and is_elf(f)]


def report(scans: list[FileScan]) -> str:
    total = sum(s.instructions for s in scans)
    above = sum(sum(s.above.values()) for s in scans)
    lines = [f"{len(scans)} ELF files, {total} instructions, {above} above the AVX2 baseline"]
    lines += [f"  {s.line()}" + "".join(f"\n    e.g. {e}" for e in s.examples) for s in scans]
    return "\n".join(lines)


if __name__ == "__main__":
    results = scan([Path(p) for p in sys.argv[1:]])
    print(report(results))
    sys.exit(1 if any(s.above for s in results) else 0)
