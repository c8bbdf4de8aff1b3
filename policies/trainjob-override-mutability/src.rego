# METADATA
# title: TrainJob overrides change only while suspended and the JobSet is inactive (synced JobSets)
# description: >-
#   On UPDATE of a TrainJob whose override list (podSpecOverrides in v2.0, podTemplateOverrides in v2.1,
#   runtimePatches from v2.2) changed semantically (absent, null and [] are equal; order matters; quantities compare
#   by value): the TrainJob must be suspended (v2.0, v2.1: the new object; v2.2 and v2.3: the old or the new object), and
#   the JobSet with the TrainJob's namespace and name must have no replicated job with active > 0. A JobSet that
#   does not exist is inactive. schedulingGates are part of the overrides and follow the same rule. CREATE and audit
#   are never checked. The JobSet state comes from JobSets that Gatekeeper syncs into data.inventory (the bundle's
#   SyncSet), always as fresh as Gatekeeper's watch; an unsynced JobSet counts as not found. The template needs no
#   external data provider, so `gator verify` runs its suite.
# custom:
#   id: trainjob-override-mutability
#   version: 2.1.8
#   specSection: A, B
#   rationale: >-
#     The Trainer merges overrides into the JobSet it creates; changing them while Jobs run would leave running Pods
#     out of step with the TrainJob. Kueue relies on the suspended window to inject and remove its scheduling gates
#     and node selectors in separate requests, which this rule allows.
#   match:
#     - apiGroups: [trainer.kubeflow.org]
#       kinds: [TrainJob]
#   operations: [UPDATE]
#   inventory:
#     - {group: jobset.x-k8s.io, version: v1alpha2, kind: JobSet}
package trainertrainjoboverridemutability

import data.lib.trainer.jobset
import data.lib.trainer.mutability
import data.lib.trainer.violations

jobset_state := jobset.from_inventory(mutability.namespace, mutability.name)

# METADATA
# title: not suspended
# description: Forbidden when the overrides changed and the suspend rule of the profile fails.
violation contains v if {
	not mutability.suspend_rule_holds
	mutability.overrides_changed
	v := violations.make(mutability.field, "Forbidden", mutability.suspend_detail)
}

# METADATA
# title: JobSet active
# description: Forbidden once per replicated job of the JobSet with active > 0.
violation contains v if {
	mutability.suspend_rule_holds
	some job in jobset_state.active # first: the synced JobSet is cheap to read, comparing overrides is not
	mutability.overrides_changed
	v := violations.make(mutability.field, "Forbidden", mutability.active_detail(job))
}
