# METADATA
# title: TrainJob override mutability
# description: >-
#   What trainjob-override-mutability and its external-data variant share, in the profile's terms: whether an
#   UPDATE changed the override list semantically (absent, null and [] are equal; order matters; quantities
#   compare by value), whether the TrainJob counts as suspended, and the details of the two Forbidden violations.
package lib.trainer.mutability

import data.lib.trainer.profile
import data.lib.trainer.review
import data.lib.trainer.semantic

# METADATA
# title: releases
# description: >-
#   The name each release's messages give the override list, and whose spec.suspend counts: the new object's
#   (v2.0, v2.1, and v2.2.0) or either object's (v2.2.1, which back-ported it, and v2.3).
releases := {
	"v2.0": {"prefix": "PodSpecOverrides", "suspend_rule": "new"},
	"v2.1": {"prefix": "PodTemplateOverrides", "suspend_rule": "new"},
	"v2.2": {"prefix": "RuntimePatches", "suspend_rule": "old_or_new"},
	"v2.3": {"prefix": "RuntimePatches", "suspend_rule": "old_or_new"},
}

settings := releases[profile.name]

field := sprintf("spec.%s", [profile.override_field])

# METADATA
# title: overrides_changed
# description: An UPDATE whose override lists differ semantically (absent, null and [] are equal).
overrides_changed if {
	review.is_update
	old := review.get(review.old_object, ["spec", profile.override_field], null)
	new := review.get(review.new_object, ["spec", profile.override_field], null)
	not semantic.same(old, new)
}

suspended(obj) if review.get(obj, ["spec", "suspend"], null) == true

# METADATA
# title: suspend_rule_holds
# description: The new object (v2.2+ also the old one) is suspended (spec.suspend exactly true).
suspend_rule_holds if suspended(review.new_object)

suspend_rule_holds if {
	settings.suspend_rule == "old_or_new"
	suspended(review.old_object)
}

suspend_suffix := {"new": "", "old_or_new": " before or after the update"}

suspend_detail := sprintf("%s can only be modified when the TrainJob is suspended%s", [settings.prefix, suspend_suffix[settings.suspend_rule]])

active_detail(job) := sprintf("%s cannot be modified when the JobSet's ReplicatedJob %v is still active", [settings.prefix, job])

namespace := object.get(review.new_object, ["metadata", "namespace"], "")

name := object.get(review.new_object, ["metadata", "name"], "")
