"""Test-only helpers: local servers that speak a real wire protocol on 127.0.0.1."""

from pathlib import Path

#: An exclusions file with no entry: the tests' "no built-in exclusions" (a named file that is missing is an error).
NO_EXCLUSIONS = str(Path(__file__).with_name("no-exclusions.toml"))
