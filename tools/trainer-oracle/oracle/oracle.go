// Command trainer-oracle runs the validating admission webhooks of one Kubeflow Trainer release (pkg/webhooks at
// the tag this module requires) on AdmissionReviews, the way upstream's own webhook tests construct them: the
// runtime framework (runtimecore.New) over controller-runtime's fake client holding the cluster objects.
//
// Input: JSON lines on stdin, each {"review": <admission.k8s.io/v1 AdmissionReview>, "objects": [<runtimes,
// JobSets, ...>]}. Output: one JSON line each, {"allowed", "errors": [{"field","type","detail"}], "message",
// "warnings"} or {"error": "..."} when the input itself is unusable. Each error says its source: `crd` (the tag's
// CRD schema and CEL rules, crd.go) or `webhook`. The tag-specific calls live in compat.go.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/runtime"
	testingutil "github.com/kubeflow/trainer/v2/pkg/util/testing"
)

type input struct {
	Review  admissionv1.AdmissionReview `json:"review"`
	Objects []json.RawMessage           `json:"objects"`
}

type fieldError struct {
	Field  string `json:"field"`
	Type   string `json:"type"`
	Detail string `json:"detail"`
	Source string `json:"source"`
}

type output struct {
	Allowed   bool            `json:"allowed"`
	Object    json.RawMessage `json:"object,omitempty"`
	OldObject json.RawMessage `json:"oldObject,omitempty"`
	Errors    []fieldError    `json:"errors"`
	Message   string          `json:"message,omitempty"`
	Warnings  []string        `json:"warnings,omitempty"`
	Error     string          `json:"error,omitempty"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "version" {
		fmt.Println(trainerVersion)
		return
	}
	reader := bufio.NewReaderSize(os.Stdin, 1<<20)
	writer := bufio.NewWriter(os.Stdout)
	encoder := json.NewEncoder(writer)
	for {
		line, err := reader.ReadBytes('\n')
		if len(line) > 0 && !(len(line) == 1 && line[0] == '\n') {
			out := evaluate(line)
			if encErr := encoder.Encode(out); encErr != nil {
				fmt.Fprintln(os.Stderr, "trainer-oracle:", encErr)
				os.Exit(2)
			}
			writer.Flush()
		}
		if err != nil {
			return
		}
	}
}

func evaluate(line []byte) (out output) {
	defer func() {
		// controller-runtime's webhook recovers a validator's panic into an error response, which the API server
		// (failurePolicy Fail) turns into a denial: a denial here too, with the panic as its only error.
		if r := recover(); r != nil {
			detail := fmt.Sprintf("panic: %v [recovered]", r)
			out = output{Errors: []fieldError{{Detail: detail, Source: "webhook"}}, Message: detail}
		}
	}()
	var in input
	if err := json.Unmarshal(line, &in); err != nil {
		return output{Error: "input: " + err.Error()}
	}
	if in.Review.Request == nil {
		return output{Error: "review: no request"}
	}
	builder := testingutil.NewClientBuilder()
	scheme := builder.Build().Scheme()
	var objs []client.Object
	for i, raw := range in.Objects {
		obj, err := decodeObject(scheme, raw)
		if err != nil {
			return output{Error: fmt.Sprintf("objects[%d]: %v", i, err)}
		}
		objs = append(objs, obj)
	}
	builder = testingutil.NewClientBuilder().WithObjects(objs...)
	req := in.Review.Request
	crdErrs, cerr := validateCRD(context.Background(), req)
	if cerr != nil {
		return output{Error: "crd: " + cerr.Error()}
	}
	ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: *req})
	var warnings admission.Warnings
	var err error
	switch req.Kind.Kind {
	case trainer.TrainJobKind:
		// upstream's tests: runtimecore.New(ctx, clientBuilder.Build(), testingutil.AsIndex(clientBuilder), ...)
		runtimes, rerr := newRuntimes(context.Background(), builder.Build(), testingutil.AsIndex(builder))
		if rerr != nil {
			return output{Error: "runtimes: " + rerr.Error()}
		}
		warnings, err = validateTrainJob(ctx, runtimes, req)
	case trainer.TrainingRuntimeKind, trainer.ClusterTrainingRuntimeKind:
		if !selectorSkips(req) {
			warnings, err = validateRuntime(ctx, req)
		}
	default:
		return output{Allowed: true, Errors: []fieldError{}}
	}
	out = output{Allowed: err == nil && len(crdErrs) == 0, Errors: []fieldError{}, Warnings: warnings}
	out.Object, out.OldObject = req.Object.Raw, req.OldObject.Raw
	var messages []string
	if len(crdErrs) > 0 {
		messages = append(messages, crdErrs.ToAggregate().Error())
		out.Errors = append(out.Errors, fieldErrors(crdErrs.ToAggregate(), "crd")...)
	}
	if err != nil {
		messages = append(messages, err.Error())
		out.Errors = append(out.Errors, fieldErrors(err, "webhook")...)
	}
	out.Message = strings.Join(messages, "; ")
	return out
}

func decodeObject(scheme *apiruntime.Scheme, raw []byte) (client.Object, error) {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, err
	}
	gvk, err := parseGVK(meta.APIVersion, meta.Kind)
	if err != nil {
		return nil, err
	}
	typed, err := scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, typed); err != nil {
		return nil, err
	}
	obj, ok := typed.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", gvk)
	}
	obj.SetResourceVersion("")
	return obj, nil
}

// validateTrainJob is TrainJobValidator.ValidateCreate/ValidateUpdate of every tag (its runtimes field is
// unexported): the runtime named by spec.runtimeRef, else "unsupported runtime", then its ValidateObjects.
func validateTrainJob(ctx context.Context, runtimes map[string]runtime.Runtime, req *admissionv1.AdmissionRequest) (admission.Warnings, error) {
	newObj := &trainer.TrainJob{}
	if err := json.Unmarshal(req.Object.Raw, newObj); err != nil {
		return nil, err
	}
	var oldObj *trainer.TrainJob
	switch req.Operation {
	case admissionv1.Create:
	case admissionv1.Update:
		oldObj = &trainer.TrainJob{}
		if err := json.Unmarshal(req.OldObject.Raw, oldObj); err != nil {
			return nil, err
		}
	default:
		return nil, nil
	}
	var pre field.ErrorList
	if oldObj == nil {
		pre = createChecks(newObj) // the checks a release's ValidateCreate makes before the lookup (compat.go)
	}
	key := runtime.RuntimeRefToRuntimeRegistryKey(newObj.Spec.RuntimeRef)
	rt, ok := runtimes[key]
	if !ok {
		return nil, fmt.Errorf("unsupported runtime: %s", key)
	}
	warnings, errs := rt.ValidateObjects(ctx, oldObj, newObj)
	return warnings, append(pre, errs...).ToAggregate()
}

func fieldErrors(err error, source string) []fieldError {
	var list []error
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		list = agg.Errors()
	} else {
		list = []error{err}
	}
	out := []fieldError{}
	for _, e := range list {
		var fe *field.Error
		if errors.As(e, &fe) {
			out = append(out, fieldError{Field: fe.Field, Type: string(fe.Type), Detail: fe.Detail, Source: source})
		} else {
			out = append(out, fieldError{Detail: e.Error(), Source: source})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Field != out[j].Field {
			return out[i].Field < out[j].Field
		}
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		return out[i].Detail < out[j].Detail
	})
	return out
}
