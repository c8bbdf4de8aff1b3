# METADATA
# title: "Training Operator v1 jobs: spec.runPolicy.managedBy takes an allowed value and never changes"
# description: >-
#   spec.runPolicy.managedBy of PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob and JAXJob (kubeflow.org/v1), when
#   set, must be one of the allowedValues (default: kubeflow.org/training-operator, kueue.x-k8s.io/multikueue), and
#   it is immutable on UPDATE, including set -> unset and unset -> set. The specification gives the disallowed-value
#   detail only for TrainJob; for v1 jobs this rule uses the analogous `ManagedBy must be <values joined by ' or '>
#   if set`, built from the allowedValues parameter. v1 jobs are not defaulted upstream, and the policy never
#   defaults.
# custom:
#   id: v1-job-managed-by
#   version: 1.2.1
#   specSection: C
#   rationale: >-
#     Same as for TrainJob: managedBy decides which controller reconciles the job (the Training Operator or
#     MultiKueue); it must name a known controller and must not change while the job exists.
#   match:
#     - apiGroups: [kubeflow.org]
#       kinds: [PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob]
#   operations: [CREATE, UPDATE]
#   parameters:
#     - name: allowedValues
#       description: >-
#         The allowed managedBy values (sites add their own controllers). Unset values are always allowed.
#       default: [kubeflow.org/training-operator, kueue.x-k8s.io/multikueue]
#       schema: {type: array, items: {type: string}}
package trainerv1jobmanagedby

import data.lib.trainer.managed_by
import data.lib.trainer.review
import data.lib.trainer.violations

field := "spec.runPolicy.managedBy"

path := ["spec", "runPolicy", "managedBy"]

allowed := managed_by.allowed(["kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"])

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
# description: >-
#   Invalid when the value changes on UPDATE, including set -> unset and unset -> set, with the Training
#   Operator's own detail (v1 jobs do not follow the Trainer's releases).
violation contains v if {
	managed_by.changed(path)
	v := violations.make(field, "Invalid", "ManagedBy value is immutable")
}
