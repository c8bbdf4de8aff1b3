package main

// Gatekeeper's K8sNativeValidation engine, as its driver evaluates a ConstraintTemplate's CEL (Gatekeeper
// pkg/drivers/k8scel: schema.Source, transform.AllVariablesCEL, Driver.AddTemplate and Driver.Query).

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
)

const (
	engineName     = "K8sNativeValidation"
	reservedPrefix = "gatekeeper_internal_"
	paramsName     = "params"
	objectName     = "anyObject"
)

// gatekeeperSource is Gatekeeper's schema.Source: the K8sNativeValidation entry's `source`.
type gatekeeperSource struct {
	Validations []struct {
		Expression        string `json:"expression,omitempty"`
		Message           string `json:"message,omitempty"`
		MessageExpression string `json:"messageExpression,omitempty"`
	} `json:"validations,omitempty"`
	FailurePolicy   *string `json:"failurePolicy,omitempty"`
	MatchConditions []struct {
		Name       string `json:"name"`
		Expression string `json:"expression"`
	} `json:"matchCondition,omitempty"`
	Variables []struct {
		Name       string `json:"name,omitempty"`
		Expression string `json:"expression,omitempty"`
	} `json:"variables,omitempty"`
	GenerateVAP        *bool    `json:"generateVAP,omitempty"`
	ResourceOperations []string `json:"resourceOperations,omitempty"`
}

// gatekeeperVariables are the variables Gatekeeper declares before the template's own (transform.AllVariablesCEL).
var gatekeeperVariables = []cel.NamedExpressionAccessor{
	&validating.Variable{
		Name:       objectName,
		Expression: `has(request.operation) && request.operation == "DELETE" && object == null ? oldObject : object`,
	},
	&validating.Variable{
		Name:       paramsName,
		Expression: "!has(params.spec) ? null : !has(params.spec.parameters) ? null: params.spec.parameters",
	},
}

func templateSource(raw json.RawMessage) (*gatekeeperSource, string, error) {
	var template struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Targets []struct {
				Code []struct {
					Engine string          `json:"engine"`
					Source json.RawMessage `json:"source"`
				} `json:"code"`
			} `json:"targets"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &template); err != nil {
		return nil, "", fmt.Errorf("template: %w", err)
	}
	if len(template.Spec.Targets) != 1 {
		return nil, "", fmt.Errorf("template: wrong number of targets defined, only 1 target allowed")
	}
	for _, code := range template.Spec.Targets[0].Code {
		if code.Engine != engineName {
			continue
		}
		var source gatekeeperSource
		if err := json.Unmarshal(code.Source, &source); err != nil {
			return nil, "", fmt.Errorf("template: %s source: %w", engineName, err)
		}
		if err := source.validate(); err != nil {
			return nil, "", err
		}
		return &source, template.Metadata.Name, nil
	}
	return nil, "", fmt.Errorf("template: %s code not defined", engineName)
}

// validate is schema.Source.Validate: reserved names and a known failure policy.
func (s *gatekeeperSource) validate() error {
	for _, condition := range s.MatchConditions {
		if strings.HasPrefix(condition.Name, reservedPrefix) {
			return fmt.Errorf("%s is not a valid match condition; cannot have %q as a prefix", condition.Name, reservedPrefix)
		}
	}
	for _, variable := range s.Variables {
		if strings.HasPrefix(variable.Name, reservedPrefix) {
			return fmt.Errorf("%s is not a valid variable; cannot have %q as a prefix", variable.Name, reservedPrefix)
		}
		if variable.Name == paramsName || variable.Name == objectName {
			return fmt.Errorf("%s an invalid variable name, %q is a reserved keyword", variable.Name, variable.Name)
		}
	}
	if _, err := s.failurePolicy(); err != nil {
		return err
	}
	return nil
}

func (s *gatekeeperSource) failurePolicy() (*admissionregistrationv1.FailurePolicyType, error) {
	if s.FailurePolicy == nil {
		return nil, nil
	}
	policy := admissionregistrationv1.FailurePolicyType(*s.FailurePolicy)
	if policy != admissionregistrationv1.Fail && policy != admissionregistrationv1.Ignore {
		return nil, fmt.Errorf("unrecognized failure policy: %s", *s.FailurePolicy)
	}
	return &policy, nil
}

func (s *gatekeeperSource) variables() []cel.NamedExpressionAccessor {
	all := append([]cel.NamedExpressionAccessor{}, gatekeeperVariables...)
	for _, v := range s.Variables {
		all = append(all, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	return all
}

func (s *gatekeeperSource) validations() []cel.ExpressionAccessor {
	out := make([]cel.ExpressionAccessor, len(s.Validations))
	for i, v := range s.Validations {
		out[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message}
	}
	return out
}

func (s *gatekeeperSource) messageExpressions() []cel.ExpressionAccessor {
	out := make([]cel.ExpressionAccessor, len(s.Validations))
	for i, v := range s.Validations {
		if v.MessageExpression != "" {
			out[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	return out
}

func (s *gatekeeperSource) matchConditions() []cel.ExpressionAccessor {
	out := make([]cel.ExpressionAccessor, len(s.MatchConditions))
	for i, mc := range s.MatchConditions {
		out[i] = &matchconditions.MatchCondition{Name: mc.Name, Expression: mc.Expression}
	}
	return out
}

// gatekeeperValidator is Driver.AddTemplate: the validator Gatekeeper keeps for a template (with cost recorders
// adding what each evaluation spends to *spent).
func gatekeeperValidator(source *gatekeeperSource, templateName string, spent *int64) (validating.Validator, error) {
	failurePolicy, err := source.failurePolicy()
	if err != nil {
		return nil, err
	}
	compiler, err := cel.NewCompositedCompiler(gatekeeperEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return nil, err
	}
	// Only Gatekeeper's own variables see `params` (the whole Constraint); the template's expressions read
	// variables.params (its spec.parameters).
	compiler.CompileAndStoreVariables(source.variables(), cel.OptionalVariableDeclarations{HasParams: true}, environment.StoredExpressions)
	plain := cel.OptionalVariableDeclarations{}
	matcher := matchconditions.NewMatcher(compiler.CompileCondition(source.matchConditions(), plain, environment.StoredExpressions),
		failurePolicy, "validatingadmissionpolicy", "vap-matcher", templateName)
	return newValidator(
		costRecorder{compiler.CompileCondition(source.validations(), plain, environment.StoredExpressions), spent},
		matcher,
		compiler.CompileCondition(nil, plain, environment.StoredExpressions),
		costRecorder{compiler.CompileCondition(source.messageExpressions(), plain, environment.StoredExpressions), spent},
		failurePolicy,
	), nil
}

var operations = map[admissionv1.Operation]admission.Operation{
	admissionv1.Create:  admission.Create,
	admissionv1.Update:  admission.Update,
	admissionv1.Delete:  admission.Delete,
	admissionv1.Connect: admission.Connect,
}

// requestAttributes is transform.RequestToVersionedAttributes: the request's own kind, resource and objects.
func requestAttributes(request *admissionv1.AdmissionRequest) (*admission.VersionedAttributes, error) {
	decode := func(raw runtime.RawExtension, what string) (runtime.Object, error) {
		if len(raw.Raw) == 0 {
			return nil, nil
		}
		object, err := decodeObject(raw.Raw, what)
		if err != nil {
			return nil, fmt.Errorf("could not unmarshal %s: %w", what, err)
		}
		return object, nil
	}
	object, err := decode(request.Object, "object")
	if err != nil {
		return nil, err
	}
	oldObject, err := decode(request.OldObject, "old object")
	if err != nil {
		return nil, err
	}
	options, err := decode(request.Options, "options")
	if err != nil {
		return nil, err
	}
	extra := map[string][]string{}
	for k, v := range request.UserInfo.Extra {
		extra[k] = append([]string{}, v...)
	}
	userInfo := &user.DefaultInfo{
		Name:   request.UserInfo.Username,
		UID:    request.UserInfo.UID,
		Groups: request.UserInfo.Groups,
		Extra:  extra,
	}
	dryRun := request.DryRun != nil && *request.DryRun
	kind := gvk(request.Kind)
	attributes := admission.NewAttributesRecord(object, oldObject, kind, request.Namespace, request.Name,
		gvr(request.Resource), request.SubResource, operations[request.Operation], options, dryRun, userInfo)
	return &admission.VersionedAttributes{
		Attributes:         attributes,
		VersionedKind:      kind,
		VersionedOldObject: oldObject,
		VersionedObject:    object,
	}, nil
}

type gatekeeperPolicy struct {
	validator validating.Validator
	spent     *int64
}

func newGatekeeperPolicy(input PolicyInput) (*gatekeeperPolicy, error) {
	source, name, err := templateSource(input.Template)
	if err != nil {
		return nil, err
	}
	spent := new(int64)
	validator, err := gatekeeperValidator(source, name, spent)
	if err != nil {
		return nil, err
	}
	return &gatekeeperPolicy{validator: validator, spent: spent}, nil
}

// evaluate is Driver.Query for one Constraint.
func (p *gatekeeperPolicy) evaluate(c CaseInput) Result {
	request, err := decodeRequest(c.Request)
	if err != nil {
		return Result{ID: c.ID, Error: err.Error()}
	}
	// Gatekeeper's webhook sets object to oldObject on DELETE; its CEL driver unsets it again, as the API server
	// leaves it for ValidatingAdmissionPolicy (variables.anyObject is the object either way).
	if request.Operation == admissionv1.Delete {
		request.Object = runtime.RawExtension{}
	}
	attributes, err := requestAttributes(request)
	if err != nil {
		return Result{ID: c.ID, Error: err.Error()}
	}
	var constraint *unstructured.Unstructured
	if len(c.Constraint) > 0 {
		if constraint, err = decodeObject(c.Constraint, "constraint"); err != nil {
			return Result{ID: c.ID, Error: err.Error()}
		}
	} else {
		return Result{ID: c.ID, Error: "constraint: required for flavour gatekeeper"}
	}
	// Gatekeeper gives a template's whole evaluation the API server's per-call limit as its budget.
	*p.spent = 0
	response := p.validator.Validate(context.Background(), attributes.GetResource(), attributes, constraint, nil, celconfig.PerCallLimit, nil)
	result := Result{ID: c.ID, Decisions: decisions(response.Decisions), Violations: []string{}, Cost: *p.spent}
	for _, decision := range response.Decisions {
		if decision.Action == validating.ActionDeny {
			result.Violations = append(result.Violations, decision.Message)
		}
	}
	return result
}

func decisions(in []validating.PolicyDecision) []Decision {
	out := make([]Decision, 0, len(in))
	for _, d := range in {
		out = append(out, Decision{Action: string(d.Action), Evaluation: string(d.Evaluation), Message: d.Message, Reason: string(d.Reason)})
	}
	return out
}
