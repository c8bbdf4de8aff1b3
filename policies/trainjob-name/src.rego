# METADATA
# title: TrainJob metadata.name is a DNS-1035 label
# description: >-
#   The TrainJob's name (it names the JobSet, its Jobs and Services) must be a DNS-1035 label of at most 63
#   characters. Profile v2.0 reproduces the webhook (CREATE and audit; one Invalid per failed test with Kubernetes'
#   own details, as IsDNS1035Label words them). From v2.1 upstream moved the check to two CRD CEL rules on the
#   TrainJob root, checked on CREATE and UPDATE (and here in audit), with the messages `metadata.name must match RFC
#   1035 DNS label format` and `metadata.name must be no more than 63 characters`. Kubernetes reports a root CEL
#   rule at the path `<nil>` (value "object"); this project reports both forms at metadata.name, the field they are
#   about.
# custom:
#   id: trainjob-name
#   version: 1.1.2
#   specSection: E1
#   rationale: >-
#     A longer name, a dot or a leading digit make the Trainer fail to create the JobSet's Services after the
#     TrainJob was accepted. Gatekeeper catches it in audit, in CI and on clusters whose CRD or webhook does not.
#   match:
#     - apiGroups: [trainer.kubeflow.org]
#       kinds: [TrainJob]
#   operations: [CREATE, UPDATE]
#   operationsByProfile:
#     v2.0: [CREATE]
package trainertrainjobname

import data.lib.trainer.profile
import data.lib.trainer.review
import data.lib.trainer.violations

# METADATA
# title: releases
# description: >-
#   v2.0's webhook checks the name on CREATE with Kubernetes' DNS-1035 details; from v2.1 the CRD's two CEL rules
#   check it on every write, with their own messages.
releases := {
	"v2.0": {"check": "webhook", "operations": {"CREATE"}},
	"v2.1": {"check": "cel", "operations": {"CREATE", "UPDATE"}},
	"v2.2": {"check": "cel", "operations": {"CREATE", "UPDATE"}},
	"v2.3": {"check": "cel", "operations": {"CREATE", "UPDATE"}},
}

settings := releases[profile.name]

messages := {
	"webhook": {
		"too_long": "must be no more than 63 characters",
		"not_a_label": "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
	},
	"cel": {
		"too_long": "metadata.name must be no more than 63 characters",
		"not_a_label": "metadata.name must match RFC 1035 DNS label format",
	},
}

name := n if {
	n := review.get(review.new_object, ["metadata", "name"], null)
	is_string(n)
}

checked if review.applies_to(settings.operations)

# METADATA
# title: too long
# description: Invalid when the name is longer than 63 characters.
violation contains v if {
	checked
	count(name) > 63
	v := violations.make("metadata.name", "Invalid", messages[settings.check].too_long)
}

# METADATA
# title: not a DNS-1035 label
# description: Invalid when the name does not match [a-z]([-a-z0-9]*[a-z0-9])?.
violation contains v if {
	checked
	not regex.match(`^[a-z]([-a-z0-9]*[a-z0-9])?$`, name)
	v := violations.make("metadata.name", "Invalid", messages[settings.check].not_a_label)
}
