package main

// The calls of Trainer v2.2.1 that differ between releases: runtimecore.New takes a Configuration (nil in upstream's
// webhook tests), and the runtime validators are typed admission.Validator[T] with no fields.

import (
	"context"
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/runtime"
	runtimecore "github.com/kubeflow/trainer/v2/pkg/runtime/core"
	"github.com/kubeflow/trainer/v2/pkg/webhooks"
)

const trainerVersion = "v2.2.1"

func newRuntimes(ctx context.Context, c client.Client, indexer client.FieldIndexer) (map[string]runtime.Runtime, error) {
	return runtimecore.New(ctx, c, indexer, nil)
}

func validateRuntime(ctx context.Context, req *admissionv1.AdmissionRequest) (admission.Warnings, error) {
	if req.Kind.Kind == trainer.TrainingRuntimeKind {
		return validateTyped(ctx, req, &webhooks.TrainingRuntimeValidator{}, func() *trainer.TrainingRuntime { return &trainer.TrainingRuntime{} })
	}
	return validateTyped(ctx, req, &webhooks.ClusterTrainingRuntimeValidator{}, func() *trainer.ClusterTrainingRuntime { return &trainer.ClusterTrainingRuntime{} })
}

func validateTyped[T apiruntime.Object](ctx context.Context, req *admissionv1.AdmissionRequest, v admission.Validator[T], mk func() T) (admission.Warnings, error) {
	newObj := mk()
	if err := json.Unmarshal(req.Object.Raw, newObj); err != nil {
		return nil, err
	}
	switch req.Operation {
	case admissionv1.Create:
		return v.ValidateCreate(ctx, newObj)
	case admissionv1.Update:
		oldObj := mk()
		if err := json.Unmarshal(req.OldObject.Raw, oldObj); err != nil {
			return nil, err
		}
		return v.ValidateUpdate(ctx, oldObj, newObj)
	}
	return nil, nil
}

// selectorSkips: the runtime webhooks of this release have no objectSelector.
func selectorSkips(*admissionv1.AdmissionRequest) bool { return false }

// createChecks: this release's TrainJob ValidateCreate checks nothing before the runtime lookup.
func createChecks(*trainer.TrainJob) field.ErrorList { return nil }
