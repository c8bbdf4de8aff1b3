package main

import (
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// library names the CEL library this binary is built on (tools/cel/modules/<library>: the k8s.io/apiserver and
// cel-go a Gatekeeper release or a Kubernetes minor vendors), set by the build.
var library = "unknown"

// Input is what `cel eval` and `cel check` read.
type Input struct {
	Policies []PolicyInput `json:"policies"`
	Cases    []CaseInput   `json:"cases"`
}

// PolicyInput is one policy: a ValidatingAdmissionPolicy with what the API server would hold beside it (flavour
// "vap"), or a ConstraintTemplate whose K8sNativeValidation source Gatekeeper evaluates (flavour "gatekeeper").
type PolicyInput struct {
	Name    string `json:"name"`
	Flavour string `json:"flavour"`

	// vap
	Policy     json.RawMessage   `json:"policy,omitempty"`
	Bindings   []json.RawMessage `json:"bindings,omitempty"`
	Params     []json.RawMessage `json:"params,omitempty"`
	Namespaces []json.RawMessage `json:"namespaces,omitempty"`

	// gatekeeper
	Template json.RawMessage `json:"template,omitempty"`
}

// CaseInput is one admission request for one policy. Request is an admission.k8s.io/v1 AdmissionRequest (Gatekeeper's
// review of one, for flavour gatekeeper); Constraint is the Constraint Gatekeeper passes as params.
type CaseInput struct {
	ID         string          `json:"id"`
	Policy     string          `json:"policy"`
	Request    json.RawMessage `json:"request"`
	Constraint json.RawMessage `json:"constraint,omitempty"`
}

// Decision is one validation's outcome, as the validator returns it.
type Decision struct {
	Action     string `json:"action"`
	Evaluation string `json:"evaluation"`
	Message    string `json:"message"`
	Reason     string `json:"reason,omitempty"`
}

// Admission is what the API server answers the client: allowed, or the status of the first denial; warnings and
// audit annotations from Warn and Audit validation actions.
type Admission struct {
	Allowed          bool              `json:"allowed"`
	Code             int32             `json:"code,omitempty"`
	Reason           string            `json:"reason,omitempty"`
	Message          string            `json:"message,omitempty"`
	Warnings         []string          `json:"warnings"`
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
}

// Result is the outcome of one case.
type Result struct {
	ID string `json:"id"`
	// Decisions: every validation's outcome (vap: per matching binding and param, in order).
	Decisions []Decision `json:"decisions"`
	// Violations (gatekeeper): the messages of the denied validations, one Gatekeeper result each.
	Violations []string `json:"violations,omitempty"`
	// Admission (vap): the API server's answer.
	Admission *Admission `json:"admission,omitempty"`
	// Cost: the runtime cost the evaluation spent of its budget (validations with the variables they read, then
	// message expressions), as the API server counts it; vap: the most any one binding's evaluation spent.
	Cost int64 `json:"cost"`
	// Error: the case could not be evaluated (bad input, unknown policy); nothing else is set.
	Error string `json:"error,omitempty"`
}

// Output is what `cel eval` prints.
type Output struct {
	Results []Result `json:"results"`
}

func decodeRequest(raw json.RawMessage) (*admissionv1.AdmissionRequest, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("request: required")
	}
	var request admissionv1.AdmissionRequest
	if err := json.Unmarshal(raw, &request); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	return &request, nil
}

func decodeObject(raw json.RawMessage, what string) (*unstructured.Unstructured, error) {
	object := &unstructured.Unstructured{}
	if err := object.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return object, nil
}
