package main

// The calls of Trainer v2.1.0 that differ between releases: runtimecore.New takes no Configuration, and the runtime
// webhooks are webhook.CustomValidator on apiruntime.Object (their runtimes field is unused by validation).

import (
	"context"
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/runtime"
	runtimecore "github.com/kubeflow/trainer/v2/pkg/runtime/core"
	"github.com/kubeflow/trainer/v2/pkg/webhooks"
)

const trainerVersion = "v2.1.0"

func newRuntimes(ctx context.Context, c client.Client, indexer client.FieldIndexer) (map[string]runtime.Runtime, error) {
	return runtimecore.New(ctx, c, indexer)
}

func validateRuntime(ctx context.Context, req *admissionv1.AdmissionRequest) (admission.Warnings, error) {
	var v webhook.CustomValidator
	var mk func() apiruntime.Object
	if req.Kind.Kind == trainer.TrainingRuntimeKind {
		v, mk = &webhooks.TrainingRuntimeWebhook{}, func() apiruntime.Object { return &trainer.TrainingRuntime{} }
	} else {
		v, mk = &webhooks.ClusterTrainingRuntimeWebhook{}, func() apiruntime.Object { return &trainer.ClusterTrainingRuntime{} }
	}
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
