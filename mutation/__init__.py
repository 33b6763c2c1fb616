"""Mutation testing of the decision code: scripts/mutation (docs/mutation.md)."""
