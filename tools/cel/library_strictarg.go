//go:build ktp_strictcost_arg

package main

// k8s.io/apiserver up to 0.34: MustBaseEnvSet takes strictCost. Gatekeeper's driver passes true (transform.StrictCost);
// the API server passes its StrictCostEnforcementForVAP feature gate, GA and locked on from 1.32, default off in
// 1.30 and 1.31.

import (
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

func gatekeeperEnvSet(ver *version.Version) *environment.EnvSet {
	return environment.MustBaseEnvSet(ver, true)
}

func vapEnvSet(ver *version.Version) *environment.EnvSet {
	return environment.MustBaseEnvSet(ver, utilfeature.DefaultFeatureGate.Enabled(features.StrictCostEnforcementForVAP))
}
