package main

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type evaluator interface {
	evaluate(CaseInput) Result
}

// registry holds the compiled policies by name, and why a policy could not be compiled.
type registry struct {
	policies map[string]evaluator
	broken   map[string]string
}

func newRegistry() *registry {
	return &registry{policies: map[string]evaluator{}, broken: map[string]string{}}
}

func (r *registry) add(i int, p PolicyInput) {
	var e evaluator
	var err error
	switch p.Flavour {
	case "gatekeeper":
		e, err = newGatekeeperPolicy(p)
	case "vap":
		e, err = newVAPPolicy(p)
	default:
		err = fmt.Errorf("flavour: must be vap or gatekeeper, not %q", p.Flavour)
	}
	delete(r.policies, p.Name)
	delete(r.broken, p.Name)
	if err != nil {
		r.broken[p.Name] = fmt.Sprintf("policies[%d] %s: %v", i, p.Name, err)
		return
	}
	r.policies[p.Name] = e
}

func evaluate(r *registry, input *Input) Output {
	for i, p := range input.Policies {
		r.add(i, p)
	}
	out := Output{Results: make([]Result, 0, len(input.Cases))}
	for _, c := range input.Cases {
		if message, ok := r.broken[c.Policy]; ok {
			out.Results = append(out.Results, Result{ID: c.ID, Error: message})
			continue
		}
		e, ok := r.policies[c.Policy]
		if !ok {
			out.Results = append(out.Results, Result{ID: c.ID, Error: fmt.Sprintf("policy: no policy named %q", c.Policy)})
			continue
		}
		out.Results = append(out.Results, e.evaluate(c))
	}
	return out
}

func gvk(k metav1.GroupVersionKind) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
}

func gvr(r metav1.GroupVersionResource) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
}
