package main

// The CRDs of the tag (manifests/base/crds, copied next to this file by the builder and embedded): the API
// server's own validation of a custom resource, as k8s.io/apiextensions-apiserver's customResourceStrategy runs
// it: defaults applied, the OpenAPI schema (update form on UPDATE), list-map/set invariants, then the
// x-kubernetes-validations rules with oldSelf on UPDATE and ratcheting (on by default since Kubernetes 1.30).
// ObjectMeta's generic checks and the scale subresource are left out: no Trainer kind has them beyond names.

import (
	"context"
	"embed"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"sigs.k8s.io/yaml"
)

//go:embed crds/*.yaml
var crdFiles embed.FS

type crdSchema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

var crdSchemas map[string]*crdSchema

func loadCRDs() (map[string]*crdSchema, error) {
	if crdSchemas != nil {
		return crdSchemas, nil
	}
	out := map[string]*crdSchema{}
	entries, err := crdFiles.ReadDir("crds")
	if err != nil {
		return nil, err
	}
	for _, entry := range entries {
		if !strings.HasPrefix(entry.Name(), "trainer.kubeflow.org_") {
			continue
		}
		data, err := crdFiles.ReadFile("crds/" + entry.Name())
		if err != nil {
			return nil, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", entry.Name(), err)
		}
		for _, version := range crd.Spec.Versions {
			if version.Name != "v1alpha1" || version.Schema == nil {
				continue
			}
			internal := &apiextensions.JSONSchemaProps{}
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(version.Schema.OpenAPIV3Schema, internal, nil); err != nil {
				return nil, fmt.Errorf("%s: %w", entry.Name(), err)
			}
			structural, err := structuralschema.NewStructural(internal)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", entry.Name(), err)
			}
			validator, _, err := apiservervalidation.NewSchemaValidator(internal)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", entry.Name(), err)
			}
			out[crd.Spec.Names.Kind] = &crdSchema{
				structural: structural,
				validator:  validator,
				cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
			}
		}
	}
	crdSchemas = out
	return out, nil
}

func decodeUnstructured(raw []byte, s *structuralschema.Structural) (map[string]interface{}, error) {
	var obj map[string]interface{}
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	structuraldefaulting.Default(obj, s)
	return obj, nil
}

func hasBlockingErr(errs field.ErrorList) bool {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

// validateCRD returns the errors the API server's CRD validation gives the request's object (nil for a kind
// without a CRD of this tag), and replaces the request's objects by their defaulted forms, which is what the API
// server hands to admission webhooks.
func validateCRD(ctx context.Context, req *admissionv1.AdmissionRequest) (field.ErrorList, error) {
	schemas, err := loadCRDs()
	if err != nil {
		return nil, err
	}
	s, ok := schemas[req.Kind.Kind]
	if !ok || req.Object.Raw == nil {
		return nil, nil
	}
	obj, err := decodeUnstructured(req.Object.Raw, s.structural)
	if err != nil {
		return nil, err
	}
	if req.Object.Raw, err = utiljson.Marshal(obj); err != nil {
		return nil, err
	}
	var errs field.ErrorList
	var celOptions []cel.Option
	var old map[string]interface{}
	if req.Operation == admissionv1.Update && req.OldObject.Raw != nil {
		if old, err = decodeUnstructured(req.OldObject.Raw, s.structural); err != nil {
			return nil, err
		}
		if req.OldObject.Raw, err = utiljson.Marshal(old); err != nil {
			return nil, err
		}
		correlated := common.NewCorrelatedObject(obj, old, &model.Structural{Structural: s.structural})
		errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, obj, old, s.validator, apiservervalidation.WithRatcheting(correlated))...)
		if oldErrs := structurallisttype.ValidateListSetsAndMaps(nil, s.structural, old); len(oldErrs) == 0 {
			errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s.structural, obj)...)
		}
		celOptions = append(celOptions, cel.WithRatcheting(correlated))
	} else {
		errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj, s.validator)...)
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s.structural, obj)...)
	}
	if s.cel != nil {
		if hasBlockingErr(errs) {
			errs = append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
		} else {
			var oldObj interface{}
			if old != nil {
				oldObj = old
			}
			celErrs, _ := s.cel.Validate(ctx, nil, s.structural, obj, oldObj, celconfig.RuntimeCELCostBudget, celOptions...)
			errs = append(errs, celErrs...)
		}
	}
	return errs, nil
}
