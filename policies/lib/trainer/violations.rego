# METADATA
# title: Violation builder
# description: >-
#   Every violation of every trainer-policy rule is built here, in the shape of a
#   Kubernetes field.Error: msg `<field>: <Type>: <detail>` and details {field, type, detail}.
package lib.trainer.violations

# METADATA
# title: make
# description: One violation; type is Invalid, Forbidden, Duplicate, Internal or Required.
make(field, type, detail) := {
	"msg": sprintf("%s: %s: %s", [field, type, detail]),
	"details": {"field": field, "type": type, "detail": detail},
}
