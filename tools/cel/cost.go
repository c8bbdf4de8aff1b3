package main

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
)

// costRecorder counts what a condition evaluator spends of the budget the validator hands it. The validator
// evaluates the validations with the whole budget and the message expressions with what is left, so the two
// recorders of one validator add up to the evaluation's cost. A run out of budget counts as the whole budget.
type costRecorder struct {
	cel.ConditionEvaluator
	spent *int64
}

func (c costRecorder) ForInput(ctx context.Context, attr *admission.VersionedAttributes, request *admissionv1.AdmissionRequest, vars cel.OptionalVariableBindings, namespace *corev1.Namespace, budget int64) ([]cel.EvaluationResult, int64, error) {
	results, remaining, err := c.ConditionEvaluator.ForInput(ctx, attr, request, vars, namespace, budget)
	if err != nil || remaining < 0 {
		*c.spent += budget
	} else {
		*c.spent += budget - remaining
	}
	return results, remaining, err
}
