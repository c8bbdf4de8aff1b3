# METADATA
# title: TrainJob overrides change only while suspended and the JobSet is inactive (external data provider)
# description: >-
#   On UPDATE of a TrainJob whose override list (podSpecOverrides in v2.0, podTemplateOverrides in v2.1,
#   runtimePatches from v2.2) changed semantically (absent, null and [] are equal; order matters; quantities compare
#   by value): the TrainJob must be suspended (v2.0, v2.1: the new object; v2.2 and v2.3: the old or the new object), and
#   the JobSet with the TrainJob's namespace and name must have no replicated job with active > 0. A JobSet that
#   does not exist is inactive. schedulingGates are part of the overrides and follow the same rule. CREATE and audit
#   are never checked. The JobSet state comes from the external data provider (parameter providerName), looked up
#   with a key unique to each admission request (<namespace>/<name>#<uid>) so that Gatekeeper's response cache never
#   serves an older state. A failed lookup is an Internal violation (fail closed). gator cannot load this template
#   (it has no external_data builtin): `trainer-policy test` runs its suite against the provider's own request
#   handler.
# custom:
#   id: trainjob-override-mutability-external-data
#   version: 1.1.8
#   specSection: A, B
#   rationale: >-
#     The Trainer merges overrides into the JobSet it creates; changing them while Jobs run would leave running Pods
#     out of step with the TrainJob. Kueue relies on the suspended window to inject and remove its scheduling gates
#     and node selectors in separate requests, which this rule allows.
#   match:
#     - apiGroups: [trainer.kubeflow.org]
#       kinds: [TrainJob]
#   operations: [UPDATE]
#   alternativeTo: trainjob-override-mutability
#   parameters:
#     - name: providerName
#       description: Name of the external data Provider object serving JobSet state.
#       default: trainer-jobset-provider
#       schema: {type: string}
#   externalDataProviders: [trainer-jobset-provider]
package trainertrainjoboverridemutabilityexternaldata

import data.lib.trainer.jobset_provider
import data.lib.trainer.mutability
import data.lib.trainer.review
import data.lib.trainer.violations

default provider := "trainer-jobset-provider"

provider := p if {
	p := input.parameters.providerName
	is_string(p)
}

key := sprintf("%v/%v", [mutability.namespace, mutability.name])

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

# METADATA
# title: not suspended
# description: Forbidden when the overrides changed and the suspend rule of the profile fails.
violation contains v if {
	not mutability.suspend_rule_holds
	mutability.overrides_changed
	v := violations.make(mutability.field, "Forbidden", mutability.suspend_detail)
}

# METADATA
# title: lookup failed
# description: Internal when the JobSet state cannot be read (fail closed), naming the error.
violation contains v if {
	mutability.overrides_changed
	mutability.suspend_rule_holds
	some error in jobset_state.errors
	v := violations.make(mutability.field, "Internal", sprintf("failed to get the state of JobSet %s from external data provider %v: %v", [key, provider, error]))
}

# METADATA
# title: JobSet active
# description: Forbidden once per replicated job of the JobSet with active > 0.
violation contains v if {
	mutability.overrides_changed # first: only a changed override asks the provider
	mutability.suspend_rule_holds
	some job in jobset_state.active
	v := violations.make(mutability.field, "Forbidden", mutability.active_detail(job))
}
