"""The languages a fixture may be written in (docs/fixtures.md): per language its test files' names, its test
command, the Debian packages of its toolchain, and how its runner's machine-readable report is read. One module per
language, one entry in KINDS (bench/languages/kinds.py)."""
