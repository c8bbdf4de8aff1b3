"""Small Go commands of this project (tools/cel) built from Debian's Go packages, cached."""
