"""Small Go commands of this project (tools/opa, tools/cel) built from Debian's Go packages, cached."""
