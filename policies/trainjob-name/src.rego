# METADATA
# title: {{ rule.title }}
# description: >-
{{ rule.description | comment(3) }}
# custom:
#   id: {{ rule.id }}
#   profile: {{ profile.name }}
package {{ rule.package }}

import data.lib.trainer.review
import data.lib.trainer.violations

name := n if {
	n := review.get(review.new_object, ["metadata", "name"], null)
	is_string(n)
}

{# The operations this profile judges (Rule.operations_in): see NameSettings.operations. #}
checked if review.applies_to({{ rule.rego_operations(profile) }})

{% if settings.check == "webhook" %}
too_long := "must be no more than 63 characters"

not_a_label := "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
{% else %}
too_long := "metadata.name must be no more than 63 characters"

not_a_label := "metadata.name must match RFC 1035 DNS label format"
{% endif %}

# METADATA
# title: too long
# description: Invalid when the name is longer than 63 characters.
violation contains v if {
	checked
	count(name) > 63
	v := violations.make("metadata.name", "Invalid", too_long)
}

# METADATA
# title: not a DNS-1035 label
# description: Invalid when the name does not match [a-z]([-a-z0-9]*[a-z0-9])?.
violation contains v if {
	checked
	not regex.match(`^[a-z]([-a-z0-9]*[a-z0-9])?$`, name)
	v := violations.make("metadata.name", "Invalid", not_a_label)
}
