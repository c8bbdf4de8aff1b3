package main

// A ValidatingAdmissionPolicy judged by the API server's own code: the policy compiled as the plugin compiles it
// (validating.compilePolicy), and every request dispatched by the plugin's dispatcher (validating.NewDispatcher),
// which matches matchConstraints and bindings, resolves paramRef and applies validationActions.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	k8serrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/warning"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// compilePolicy is validating.compilePolicy (unexported there), line for line, but for the cost recorders around
// the validations and message expressions (they add what each evaluation spends to *spent).
func compilePolicy(policy *admissionregistrationv1.ValidatingAdmissionPolicy, spent *int64) validating.Validator {
	hasParam := policy.Spec.ParamKind != nil
	optionalVars := cel.OptionalVariableDeclarations{HasParams: hasParam, HasAuthorizer: true}
	expressionOptionalVars := cel.OptionalVariableDeclarations{HasParams: hasParam, HasAuthorizer: false}
	failurePolicy := policy.Spec.FailurePolicy
	var matcher matchconditions.Matcher
	compiler, err := cel.NewCompositedCompiler(vapEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return brokenValidator(failurePolicy, err)
	}
	variables := make([]cel.NamedExpressionAccessor, len(policy.Spec.Variables))
	for i, v := range policy.Spec.Variables {
		variables[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	compiler.CompileAndStoreVariables(variables, optionalVars, environment.StoredExpressions)
	if len(policy.Spec.MatchConditions) > 0 {
		conditions := make([]cel.ExpressionAccessor, len(policy.Spec.MatchConditions))
		for i := range policy.Spec.MatchConditions {
			conditions[i] = (*matchconditions.MatchCondition)(&policy.Spec.MatchConditions[i])
		}
		matcher = matchconditions.NewMatcher(compiler.CompileCondition(conditions, optionalVars, environment.StoredExpressions),
			failurePolicy, "policy", "validate", policy.Name)
	}
	validations := make([]cel.ExpressionAccessor, len(policy.Spec.Validations))
	messages := make([]cel.ExpressionAccessor, len(policy.Spec.Validations))
	for i, v := range policy.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	annotations := make([]cel.ExpressionAccessor, len(policy.Spec.AuditAnnotations))
	for i, a := range policy.Spec.AuditAnnotations {
		annotations[i] = &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}
	}
	return newValidator(
		costRecorder{compiler.CompileCondition(validations, optionalVars, environment.StoredExpressions), spent},
		matcher,
		compiler.CompileCondition(annotations, optionalVars, environment.StoredExpressions),
		costRecorder{compiler.CompileCondition(messages, expressionOptionalVars, environment.StoredExpressions), spent},
		failurePolicy,
	)
}

// defaultPolicy applies the API server's defaults (admissionregistration/v1 SetDefaults_*) that the dispatcher and
// matcher rely on: failurePolicy Fail, matchPolicy Equivalent, empty selectors, rule scope "*".
func defaultPolicy(policy *admissionregistrationv1.ValidatingAdmissionPolicy) {
	if policy.Spec.FailurePolicy == nil {
		fail := admissionregistrationv1.Fail
		policy.Spec.FailurePolicy = &fail
	}
	defaultMatchResources(policy.Spec.MatchConstraints)
}

func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		equivalent := admissionregistrationv1.Equivalent
		m.MatchPolicy = &equivalent
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]admissionregistrationv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				all := admissionregistrationv1.AllScopes
				rules[i].Scope = &all
			}
		}
	}
}

// recordingValidator keeps every ValidateResult the dispatcher asks for, to report each validation's decision, and
// the most one of those evaluations cost.
type recordingValidator struct {
	validating.Validator
	results *[]validating.ValidateResult
	spent   *int64
	maxCost *int64
}

func (r recordingValidator) Validate(ctx context.Context, resource schema.GroupVersionResource, attr *admission.VersionedAttributes, params runtime.Object, namespace *corev1.Namespace, budget int64, authz authorizer.Authorizer) validating.ValidateResult {
	*r.spent = 0
	result := r.Validator.Validate(ctx, resource, attr, params, namespace, budget, authz)
	*r.results = append(*r.results, result)
	*r.maxCost = max(*r.maxCost, *r.spent)
	return result
}

// staticInformer serves fixed parameter objects to generic.CollectParams, which asks an informer only whether it
// has synced and for its lister: an indexer holds the objects, no reflector runs.
type staticInformer struct {
	lister cache.GenericLister
}

type syncedInformer struct {
	cache.SharedIndexInformer // never called: CollectParams asks only HasSynced
}

func (syncedInformer) HasSynced() bool { return true }

func (s staticInformer) Informer() cache.SharedIndexInformer { return syncedInformer{} }
func (s staticInformer) Lister() cache.GenericLister         { return s.lister }

func newStaticInformer(objects []*unstructured.Unstructured, resource schema.GroupResource) (staticInformer, error) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objects {
		if err := indexer.Add(o); err != nil {
			return staticInformer{}, err
		}
	}
	return staticInformer{lister: cache.NewGenericLister(indexer, resource)}, nil
}

type vapPolicy struct {
	name       string
	hook       validating.PolicyHook
	results    *[]validating.ValidateResult
	maxCost    *int64
	dispatcher interface {
		Dispatch(context.Context, admission.Attributes, admission.ObjectInterfaces, []validating.PolicyHook) error
	}
	namespaces corelisters.NamespaceLister
	indexer    cache.Indexer
}

func newVAPPolicy(input PolicyInput) (*vapPolicy, error) {
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	if err := strictUnmarshal(input.Policy, &policy); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defaultPolicy(&policy)
	var bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for i, raw := range input.Bindings {
		var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
		if err := strictUnmarshal(raw, &binding); err != nil {
			return nil, fmt.Errorf("bindings[%d]: %w", i, err)
		}
		if binding.Spec.PolicyName != policy.Name {
			continue // the API server pairs a binding with the policy it names
		}
		defaultMatchResources(binding.Spec.MatchResources)
		bindings = append(bindings, &binding)
	}
	results, spent, maxCost := &[]validating.ValidateResult{}, new(int64), new(int64)
	hook := validating.PolicyHook{
		Policy:    &policy,
		Bindings:  bindings,
		Evaluator: recordingValidator{Validator: compilePolicy(&policy, spent), results: results, spent: spent, maxCost: maxCost},
	}
	if kind := policy.Spec.ParamKind; kind != nil {
		gv, err := schema.ParseGroupVersion(kind.APIVersion)
		if err != nil {
			return nil, fmt.Errorf("policy: spec.paramKind.apiVersion: %w", err)
		}
		var params []*unstructured.Unstructured
		namespaced := false
		for i, raw := range input.Params {
			param, err := decodeObject(raw, fmt.Sprintf("params[%d]", i))
			if err != nil {
				return nil, err
			}
			if param.GetAPIVersion() == kind.APIVersion && param.GetKind() == kind.Kind {
				params = append(params, param)
				namespaced = namespaced || param.GetNamespace() != ""
			}
		}
		resource := gv.WithResource(kind.Kind).GroupResource()
		informer, err := newStaticInformer(params, resource)
		if err != nil {
			return nil, err
		}
		hook.ParamInformer = informer
		hook.ParamScope = meta.RESTScopeRoot
		if namespaced || kind.Kind == "ConfigMap" {
			hook.ParamScope = meta.RESTScopeNamespace
		}
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for i, raw := range input.Namespaces {
		var namespace corev1.Namespace
		if err := strictUnmarshal(raw, &namespace); err != nil {
			return nil, fmt.Errorf("namespaces[%d]: %w", i, err)
		}
		if err := indexer.Add(&namespace); err != nil {
			return nil, err
		}
	}
	lister := corelisters.NewNamespaceLister(indexer)
	matcher := generic.NewPolicyMatcher(matching.NewMatcher(lister, nil))
	return &vapPolicy{
		name:       policy.Name,
		hook:       hook,
		results:    results,
		maxCost:    maxCost,
		dispatcher: validating.NewDispatcher(denyAll{}, matcher),
		namespaces: lister,
		indexer:    indexer,
	}, nil
}

// denyAll answers the `authorizer` variable: these policies never ask it.
type denyAll struct{}

func (denyAll) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionNoOpinion, "", nil
}

// annotatedAttributes keeps the audit annotations the dispatcher publishes for the Audit validation action.
type annotatedAttributes struct {
	admission.Attributes
	mu          sync.Mutex
	annotations map[string]string
}

func (a *annotatedAttributes) AddAnnotation(key, value string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.annotations[key] = value
	return nil
}

func (a *annotatedAttributes) AddAnnotationWithLevel(key, value string, _ auditinternal.Level) error {
	return a.AddAnnotation(key, value)
}

type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

var scheme = runtime.NewScheme()

func (p *vapPolicy) evaluate(c CaseInput) Result {
	request, err := decodeRequest(c.Request)
	if err != nil {
		return Result{ID: c.ID, Error: err.Error()}
	}
	versioned, err := requestAttributes(request)
	if err != nil {
		return Result{ID: c.ID, Error: err.Error()}
	}
	// A namespace the request names exists, unlabelled, unless the input gave it.
	if ns := request.Namespace; ns != "" && request.Kind.Kind != "Namespace" {
		if _, err := p.namespaces.Get(ns); k8serrors.IsNotFound(err) {
			_ = p.indexer.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
	}
	attributes := &annotatedAttributes{Attributes: versioned.Attributes, annotations: map[string]string{}}
	recorder := &warnings{}
	ctx := warning.WithWarningRecorder(context.Background(), recorder)
	*p.results, *p.maxCost = nil, 0
	err = p.dispatcher.Dispatch(ctx, attributes, admission.NewObjectInterfacesFromScheme(scheme), []validating.PolicyHook{p.hook})
	result := Result{ID: c.ID, Decisions: []Decision{}, Cost: *p.maxCost}
	for _, r := range *p.results {
		result.Decisions = append(result.Decisions, decisions(r.Decisions)...)
	}
	answer := &Admission{Allowed: err == nil, Warnings: append([]string{}, recorder.list...)}
	if len(attributes.annotations) > 0 {
		answer.AuditAnnotations = attributes.annotations
	}
	var status *k8serrors.StatusError
	switch {
	case err == nil:
	case errors.As(err, &status):
		answer.Code, answer.Reason, answer.Message = status.ErrStatus.Code, string(status.ErrStatus.Reason), status.ErrStatus.Message
	default:
		answer.Code, answer.Message = 500, err.Error()
	}
	sort.Strings(answer.Warnings)
	result.Admission = answer
	return result
}

func strictUnmarshal(raw json.RawMessage, into any) error {
	if len(raw) == 0 {
		return fmt.Errorf("required")
	}
	return json.Unmarshal(raw, into)
}
