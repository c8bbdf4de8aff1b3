package main

// `cel check`: every expression compiled the way the API server validates a new or changed
// ValidatingAdmissionPolicy (the NewExpressions environment of a compatibility version: an API server of version
// 1.N offers the CEL libraries of 1.(N-1)). A Gatekeeper template is checked as the policy Gatekeeper generates from
// it (its variables, the Constraint as params).
//
// `cel check --environment gatekeeper` instead compiles a template's K8sNativeValidation source with the
// declarations of Gatekeeper's driver (pkg/drivers/k8scel Driver.AddTemplate): only the variables see `params`,
// validations, messages and match conditions see neither params nor an authorizer. The driver compiles in the
// StoredExpressions environment of the k8s.io/apiserver it vendors, which offers every library that version knows.
// This tool's library is newer, so its StoredExpressions would offer libraries an older Gatekeeper lacks; the
// NewExpressions environment at compatibility version V is Kubernetes' own definition of what a version-V library
// runs (what an API server lets be stored must run after a rollback to V), so it stands in for Gatekeeper's
// StoredExpressions when Gatekeeper vendors k8s.io/apiserver 0.V.

import (
	"encoding/json"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
)

// CheckError is one expression that does not compile.
type CheckError struct {
	Policy string `json:"policy"`
	Field  string `json:"field"`
	Error  string `json:"error"`
}

// CheckOutput is what `cel check` prints.
type CheckOutput struct {
	CompatibilityVersion string       `json:"compatibilityVersion"`
	Errors               []CheckError `json:"errors"`
}

type expressions struct {
	hasParams       bool
	variables       []cel.NamedExpressionAccessor
	matchConditions []cel.ExpressionAccessor
	validations     []cel.ExpressionAccessor
	messages        []cel.ExpressionAccessor
}

func policyExpressions(input PolicyInput) (*expressions, error) {
	switch input.Flavour {
	case "gatekeeper":
		source, _, err := templateSource(input.Template)
		if err != nil {
			return nil, err
		}
		return &expressions{
			hasParams:       true,
			variables:       source.variables(),
			matchConditions: source.matchConditions(),
			validations:     source.validations(),
			messages:        source.messageExpressions(),
		}, nil
	case "vap":
		var policy admissionregistrationv1.ValidatingAdmissionPolicy
		if err := json.Unmarshal(input.Policy, &policy); err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		e := &expressions{hasParams: policy.Spec.ParamKind != nil}
		for _, v := range policy.Spec.Variables {
			e.variables = append(e.variables, &validating.Variable{Name: v.Name, Expression: v.Expression})
		}
		for i := range policy.Spec.MatchConditions {
			e.matchConditions = append(e.matchConditions, (*matchconditions.MatchCondition)(&policy.Spec.MatchConditions[i]))
		}
		for _, v := range policy.Spec.Validations {
			e.validations = append(e.validations, &validating.ValidationCondition{Expression: v.Expression, Message: v.Message})
			if v.MessageExpression != "" {
				e.messages = append(e.messages, &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression})
			} else {
				e.messages = append(e.messages, nil)
			}
		}
		return e, nil
	default:
		return nil, fmt.Errorf("flavour: must be vap or gatekeeper, not %q", input.Flavour)
	}
}

func check(input *Input, compat string, gatekeeperDriver bool) CheckOutput {
	out := CheckOutput{CompatibilityVersion: compat, Errors: []CheckError{}}
	ver, err := version.ParseMajorMinor(compat)
	if err != nil {
		fail(2, "cel: --compatibility-version: "+err.Error())
	}
	for _, p := range input.Policies {
		if gatekeeperDriver && p.Flavour != "gatekeeper" {
			out.Errors = append(out.Errors, CheckError{Policy: p.Name, Error: "--environment gatekeeper checks only flavour gatekeeper"})
			continue
		}
		e, err := policyExpressions(p)
		if err != nil {
			out.Errors = append(out.Errors, CheckError{Policy: p.Name, Error: err.Error()})
			continue
		}
		compiler, err := cel.NewCompositedCompiler(vapEnvSet(ver))
		if err != nil {
			fail(1, "cel: "+err.Error())
		}
		withAuthz := cel.OptionalVariableDeclarations{HasParams: e.hasParams, HasAuthorizer: true}
		plain := cel.OptionalVariableDeclarations{HasParams: e.hasParams}
		variables := withAuthz
		if gatekeeperDriver {
			// Driver.AddTemplate: CompileAndStoreVariables with HasParams, everything else with no optional variables.
			variables = cel.OptionalVariableDeclarations{HasParams: true}
			withAuthz = cel.OptionalVariableDeclarations{}
			plain = cel.OptionalVariableDeclarations{}
		}
		report := func(field string, result cel.CompilationResult) {
			if result.Error != nil {
				out.Errors = append(out.Errors, CheckError{Policy: p.Name, Field: field, Error: result.Error.Error()})
			}
		}
		for i, v := range e.variables {
			report(fmt.Sprintf("variables[%d] %s", i, v.GetName()), compiler.CompileAndStoreVariable(v, variables, environment.NewExpressions))
		}
		for i, mc := range e.matchConditions {
			report(fmt.Sprintf("matchConditions[%d]", i), compiler.CompileCELExpression(mc, withAuthz, environment.NewExpressions))
		}
		for i, v := range e.validations {
			report(fmt.Sprintf("validations[%d].expression", i), compiler.CompileCELExpression(v, withAuthz, environment.NewExpressions))
		}
		for i, m := range e.messages {
			if m != nil {
				report(fmt.Sprintf("validations[%d].messageExpression", i), compiler.CompileCELExpression(m, plain, environment.NewExpressions))
			}
		}
	}
	return out
}
