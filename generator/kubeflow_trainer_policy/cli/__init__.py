"""The `trainer-policy` command line."""
