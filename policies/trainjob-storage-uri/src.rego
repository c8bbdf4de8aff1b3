# METADATA
# title: TrainJob initializer storageUri is empty or a URI with a scheme
# description: >-
#   v2.3's CRD CEL rule on spec.initializer.dataset.storageUri and spec.initializer.model.storageUri: the value is
#   "" or matches ^[A-Za-z][A-Za-z0-9+.-]*://.+$ (`storageUri may be empty, or it must be a valid URI
#   (scheme://...)`, Invalid at the field). CREATE, UPDATE and audit; on UPDATE a value equal to the old object's
#   is not judged again, as the API server's validation ratcheting (on by default from Kubernetes 1.30) lets an
#   unchanged value pass. Earlier releases have no such rule, and their profiles report nothing.
# custom:
#   id: trainjob-storage-uri
#   version: 1.0.0
#   specSection: CRD CEL (v2.3 storageUri)
#   rationale: >-
#     The initializers download from storageUri by its scheme (hf://, s3://, pvc://); a value without one is
#     admitted by an older CRD and fails only when the initializer Pod runs. Gatekeeper reports it in audit, in CI
#     and on clusters whose CRD predates the rule.
#   match:
#     - apiGroups: [trainer.kubeflow.org]
#       kinds: [TrainJob]
#   operations: [CREATE, UPDATE]
package trainertrainjobstorageuri

import data.lib.trainer.profile
import data.lib.trainer.review
import data.lib.trainer.violations

# METADATA
# title: releases
# description: Whether the release's CRD carries the storageUri CEL rule (v2.3).
releases := {
	"v2.0": {"check": false},
	"v2.1": {"check": false},
	"v2.2": {"check": false},
	"v2.3": {"check": true},
}

settings := releases[profile.name]

initializers := ["dataset", "model"]

detail := "storageUri may be empty, or it must be a valid URI (scheme://...)"

uri(obj, initializer) := review.get(review.get(review.get(review.get(obj, ["spec"], null), ["initializer"], null), [initializer], null), ["storageUri"], null)

# METADATA
# title: valid
# description: The CRD's rule, `self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')` (both RE2).
valid(value) if value == ""

valid(value) if regex.match(`^[A-Za-z][A-Za-z0-9+.-]*://.+$`, value)

# METADATA
# title: ratcheted
# description: An UPDATE that leaves the value as it was (validation ratcheting lets it pass).
ratcheted(initializer, value) if {
	review.is_update
	uri(review.old_object, initializer) == value
}

# METADATA
# title: storageUri not a URI
# description: Invalid when a set storageUri is neither empty nor `<scheme>://<something>`.
violation contains v if {
	settings.check
	review.applies_to({"CREATE", "UPDATE"})
	some initializer in initializers
	value := uri(review.new_object, initializer)
	is_string(value)
	not valid(value)
	not ratcheted(initializer, value)
	v := violations.make(sprintf("spec.initializer.%s.storageUri", [initializer]), "Invalid", detail)
}
