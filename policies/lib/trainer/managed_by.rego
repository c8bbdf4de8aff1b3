# METADATA
# title: managedBy checks
# description: >-
#   What trainjob-managed-by and v1-job-managed-by share: the allowed values (parameter allowedValues, else the
#   rule's defaults), the value of a managedBy field when set, and whether an UPDATE changes it.
package lib.trainer.managed_by

import data.lib.trainer.review

# METADATA
# title: allowed
# description: The allowed values (parameter allowedValues, else `defaults`).
allowed(defaults) := values if {
	values := input.parameters.allowedValues
	is_array(values)
} else := defaults

# METADATA
# title: not_allowed
# description: The detail of a value outside `allowed_values`, naming the allowed strings.
not_allowed(allowed_values) := sprintf("ManagedBy must be %s if set", [concat(" or ", [v | some v in allowed_values; is_string(v)])])

# METADATA
# title: value
# description: The value at `path` of `obj` when set (present and not null).
value(obj, path) := v if {
	v := review.get(obj, path, null)
	v != null
}

# METADATA
# title: changed
# description: An UPDATE changes the value at `path`, including set -> unset and unset -> set.
changed(path) if {
	review.is_update
	review.get(review.old_object, path, null) != review.get(review.new_object, path, null)
}
