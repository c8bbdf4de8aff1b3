# METADATA
# title: {{ rule.title | yaml_scalar }}
# description: >-
{{ rule.description | comment(3) }}
# custom:
#   id: {{ rule.id | yaml_scalar }}
#   profile: {{ profile.name | yaml_scalar }}
package {{ rule.package }}

import data.lib.trainer.review
import data.lib.trainer.violations

field := {{ field | tojson }}

path := {{ path | tojson }}

# METADATA
# title: allowed
# description: The allowed values (parameter allowedValues, defaulting to the upstream list).
allowed := values if {
	values := input.parameters.allowedValues
	is_array(values)
} else := {{ default_allowed | tojson }}

allowed_text := concat(" or ", [v | some v in allowed; is_string(v)])

# METADATA
# title: managed_by
# description: The value when set (present and not null).
managed_by(obj) := value if {
	value := review.get(obj, path, null)
	value != null
}

# METADATA
# title: value not allowed
# description: Invalid when a set value is not one of the allowed values (CREATE, UPDATE and audit).
violation contains v if {
	review.applies_to({{ rule.rego_operations(profile) }})
	value := managed_by(review.new_object)
	not value in allowed
	v := violations.make(field, "Invalid", sprintf("ManagedBy must be %s if set", [allowed_text]))
}

# METADATA
# title: immutable
# description: Invalid when the value changes on UPDATE, including set -> unset and unset -> set.
violation contains v if {
	review.is_update
	review.get(review.old_object, path, null) != review.get(review.new_object, path, null)
	v := violations.make(field, "Invalid", {{ settings.immutable_detail | tojson }})
}
