"""CEL beside Rego: Kubernetes' own admission-policy code (tools/cel) evaluates the rules' CEL."""
