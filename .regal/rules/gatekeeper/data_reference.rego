# METADATA
# description: |
#   A module Gatekeeper loads (a template's rego or libs, and their sources under policies/ and profiles/) reads
#   no data but data.inventory and data.lib.*: Gatekeeper's rewriter refuses any other reference, and the
#   template then never reaches `created`. Tests are exempt: Gatekeeper never loads them.
# related_resources:
#   - description: docs/lint.md
#     ref: https://github.com/kubeflow/trainer-policy/blob/main/docs/lint.md
# schemas:
#   - input: schema.regal.ast
package custom.regal.rules.gatekeeper["data-reference"]

import data.regal.result

# METADATA
# description: Every reference whose root is `data` and whose first key is neither inventory nor lib.
report contains violation if {
	not _test_file
	walk(input, [_, node])
	_data_ref(node)
	not _allowed(node.value)
	violation := result.fail(rego.metadata.chain(), result.location(node))
}

_test_file if endswith(input.regal.file.name, "_test.rego")

_data_ref(node) if {
	node.type == "ref"
	node.value[0].type == "var"
	node.value[0].value == "data"
}

_allowed(ref) if {
	ref[1].type == "string"
	ref[1].value in {"inventory", "lib"}
}
