# METADATA
# description: |
#   Every package, and every `violation` rule of a rule's entry module (src.rego), has a METADATA block: the rule
#   pages and Gatekeeper's users read the package's title and description and what each violation reports.
#   Regal's custom/missing-metadata asks it of every public rule; this asks it of what people read.
# related_resources:
#   - description: docs/lint.md
#     ref: https://github.com/kubeflow/trainer-policy/blob/main/docs/lint.md
# schemas:
#   - input: schema.regal.ast
package custom.regal.rules.trainer["missing-metadata"]

import data.regal.result

# METADATA
# description: A package without METADATA (tests aside).
report contains violation if {
	not _test_file
	not input.package.annotations
	violation := result.fail(rego.metadata.chain(), result.location(input.package))
}

# METADATA
# description: A violation rule of an entry module without METADATA.
report contains violation if {
	not _test_file
	_entry_module
	some rule in input.rules
	rule.head.ref[0].value == "violation"
	count(object.get(rule, "annotations", [])) == 0
	violation := result.fail(rego.metadata.chain(), result.location(rule.head.ref[0]))
}

_test_file if endswith(input.regal.file.name, "_test.rego")

_entry_module if input.regal.file.name == "src.rego"

_entry_module if endswith(input.regal.file.name, "/src.rego")
