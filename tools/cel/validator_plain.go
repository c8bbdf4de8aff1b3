//go:build !ktp_validator_err

package main

// k8s.io/apiserver up to 0.35: NewValidator takes no compile error; a policy whose environment cannot be built is
// an error of the tool (it never is: the base environment is the library's own).

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
)

func newValidator(validations cel.ConditionEvaluator, matcher matchconditions.Matcher, annotations, messages cel.ConditionEvaluator, failurePolicy *admissionregistrationv1.FailurePolicyType) validating.Validator {
	return validating.NewValidator(validations, matcher, annotations, messages, failurePolicy)
}

func brokenValidator(failurePolicy *admissionregistrationv1.FailurePolicyType, err error) validating.Validator {
	fail(1, "cel: "+err.Error())
	return nil
}
