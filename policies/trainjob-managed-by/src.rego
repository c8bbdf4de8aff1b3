# METADATA
# title: TrainJob spec.managedBy takes an allowed value and never changes
# description: >-
#   spec.managedBy of a TrainJob, when set, must be one of the allowedValues (default:
#   trainer.kubeflow.org/trainjob-controller, kueue.x-k8s.io/multikueue), and it is immutable on UPDATE, including
#   set -> unset and unset -> set. The policy validates only; it never defaults the field.
# custom:
#   id: trainjob-managed-by
#   version: 1.2.2
#   specSection: C
#   rationale: >-
#     A value other than the built-in controller's hands reconciliation to another controller (MultiKueue dispatches
#     to worker clusters); changing it mid-life would let two controllers fight over one job.
#   match:
#     - apiGroups: [trainer.kubeflow.org]
#       kinds: [TrainJob]
#   operations: [CREATE, UPDATE]
#   parameters:
#     - name: allowedValues
#       description: >-
#         The allowed managedBy values (sites add their own controllers). Unset values are always allowed.
#       default: [trainer.kubeflow.org/trainjob-controller, kueue.x-k8s.io/multikueue]
#       schema: {type: array, items: {type: string}}
package trainertrainjobmanagedby

import data.lib.trainer.managed_by
import data.lib.trainer.profile
import data.lib.trainer.review
import data.lib.trainer.violations

field := "spec.managedBy"

path := ["spec", "managedBy"]

allowed := managed_by.allowed(["trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue"])

# The immutability detail: the webhook's text until v2.1, the CRD's CEL `field is immutable` from v2.2.
immutable_detail := {
	"v2.0": "ManagedBy value is immutable",
	"v2.1": "ManagedBy value is immutable",
	"v2.2": "field is immutable",
	"v2.3": "field is immutable",
}[profile.name]

# METADATA
# title: value not allowed
# description: Invalid when a set value is not one of the allowed values (CREATE, UPDATE and audit).
violation contains v if {
	review.applies_to({"CREATE", "UPDATE"})
	value := managed_by.value(review.new_object, path)
	not value in allowed
	v := violations.make(field, "Invalid", managed_by.not_allowed(allowed))
}

# METADATA
# title: immutable
# description: Invalid when the value changes on UPDATE, including set -> unset and unset -> set.
violation contains v if {
	managed_by.changed(path)
	v := violations.make(field, "Invalid", immutable_detail)
}
