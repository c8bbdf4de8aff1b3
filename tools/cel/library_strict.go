//go:build !ktp_strictcost_arg

package main

// k8s.io/apiserver 0.35 on: strict cost is always on (StrictCostOpt in the base options).

import (
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/cel/environment"
)

func gatekeeperEnvSet(ver *version.Version) *environment.EnvSet {
	return environment.MustBaseEnvSet(ver)
}

func vapEnvSet(ver *version.Version) *environment.EnvSet {
	return environment.MustBaseEnvSet(ver)
}
