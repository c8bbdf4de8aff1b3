package main

// The calls of Trainer v2.3.0 that differ between releases: runtimecore.New takes a Configuration (nil in upstream's
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

const trainerVersion = "v2.3.0"

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

// selectorSkips is the objectSelector v2.3.0's webhook configuration puts on both runtime webhooks
// (manifests/base/webhook/patch_validating.yaml): `trainer.kubeflow.org/webhook-validation NotIn [disabled]`. The
// API server calls the webhook when the object or the old object matches it.
func selectorSkips(req *admissionv1.AdmissionRequest) bool {
	matches := func(raw []byte) bool {
		if raw == nil {
			return false
		}
		var obj struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			return true
		}
		return obj.Metadata.Labels["trainer.kubeflow.org/webhook-validation"] != "disabled"
	}
	return !matches(req.Object.Raw) && !matches(req.OldObject.Raw)
}

// createChecks: this release's TrainJob ValidateCreate checks nothing before the runtime lookup.
func createChecks(*trainer.TrainJob) field.ErrorList { return nil }
