"""Test-only helpers: local servers that speak a real wire protocol on 127.0.0.1."""
