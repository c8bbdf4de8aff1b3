//go:build ktp_validator_err

package main

// k8s.io/apiserver 0.36 on: NewValidator carries the error of a policy that could not be compiled.

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
)

func newValidator(validations cel.ConditionEvaluator, matcher matchconditions.Matcher, annotations, messages cel.ConditionEvaluator, failurePolicy *admissionregistrationv1.FailurePolicyType) validating.Validator {
	return validating.NewValidator(validations, matcher, annotations, messages, failurePolicy, nil)
}

func brokenValidator(failurePolicy *admissionregistrationv1.FailurePolicyType, err error) validating.Validator {
	return validating.NewValidator(nil, nil, nil, nil, failurePolicy, err)
}
