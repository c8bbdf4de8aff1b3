# METADATA
# title: {{ rule.title | yaml_scalar }}
# description: >-
{{ rule.description | comment(3) }}
# custom:
#   id: {{ rule.id | yaml_scalar }}
#   profile: {{ profile.name | yaml_scalar }}
package {{ rule.package }}

{% if source == "ExternalData" %}
import data.lib.trainer.jobset_provider
{% else %}
import data.lib.trainer.jobset
{% endif %}
import data.lib.trainer.review
import data.lib.trainer.semantic
import data.lib.trainer.violations

field := {{ profile.override_path | tojson }}

{% if source == "ExternalData" %}
default provider := {{ default_provider | tojson }}

provider := p if {
	p := input.parameters.providerName
	is_string(p)
}
{% endif %}

# METADATA
# title: overrides_changed
# description: An UPDATE whose {{ profile.override_field }} differ semantically (absent, null and [] are equal).
overrides_changed if {
	review.is_update
	old := review.get(review.old_object, ["spec", {{ profile.override_field | tojson }}], null)
	new := review.get(review.new_object, ["spec", {{ profile.override_field | tojson }}], null)
	not semantic.same(old, new)
}

suspended(obj) if review.get(obj, ["spec", "suspend"], null) == true

# METADATA
# title: suspend_rule_holds
# description: The {{ "new" if settings.suspend_rule == "new" else "old or the new" }} object is suspended (spec.suspend exactly true).
suspend_rule_holds if suspended(review.new_object)
{% if settings.suspend_rule == "old_or_new" %}
suspend_rule_holds if suspended(review.old_object)
{% endif %}

namespace := object.get(review.new_object, ["metadata", "namespace"], "")

name := object.get(review.new_object, ["metadata", "name"], "")

{% if source == "ExternalData" %}
key := sprintf("%v/%v", [namespace, name])

# METADATA
# title: lookup_key
# description: >-
#   <namespace>/<name>#<request uid>: Gatekeeper caches every answer per key (3 minutes by default),
#   so a key unique to the admission request always reaches the provider and its watch-fed state.
#   The provider strips the suffix. A request without a uid looks up the bare key.
lookup_key := sprintf("%s#%s", [key, uid]) if {
	uid := review.get(input.review, ["uid"], "")
	is_string(uid)
	uid != ""
} else := key

jobset_state := jobset_provider.from_external_data(provider, lookup_key)
{% else %}
jobset_state := jobset.from_inventory(namespace, name)
{% endif %}

# METADATA
# title: not suspended
# description: Forbidden when the overrides changed and the suspend rule of the profile fails.
violation contains v if {
	overrides_changed
	not suspend_rule_holds
	v := violations.make(field, "Forbidden", {{ settings.suspend_detail | tojson }})
}

{% if source == "ExternalData" %}
# METADATA
# title: lookup failed
# description: Internal when the JobSet state cannot be read (fail closed), naming the error.
violation contains v if {
	overrides_changed
	suspend_rule_holds
	some error in jobset_state.errors
	v := violations.make(field, "Internal", sprintf("failed to get the state of JobSet %s from external data provider %v: %v", [key, provider, error]))
}

{% endif %}
# METADATA
# title: JobSet active
# description: Forbidden once per replicated job of the JobSet with active > 0.
violation contains v if {
	overrides_changed
	suspend_rule_holds
	some job in jobset_state.active
	v := violations.make(field, "Forbidden", sprintf({{ settings.active_detail('%v') | tojson }}, [job]))
}
