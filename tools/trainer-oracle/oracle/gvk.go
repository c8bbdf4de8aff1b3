package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func parseGVK(apiVersion, kind string) (schema.GroupVersionKind, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	if kind == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("no kind")
	}
	return gv.WithKind(kind), nil
}
