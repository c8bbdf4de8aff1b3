# METADATA
# title: Admission review accessors
# description: >-
#   Safe access to input.review: the objects are {} when missing or not objects, and
#   transition checks need an UPDATE with both objects (audit reviews have operation "" and
#   oldObject null).
package lib.trainer.review

# METADATA
# title: new_object
# description: The request's object, {} when missing (DELETE) or not an object.
new_object := o if {
	o := input.review.object
	is_object(o)
} else := {}

# METADATA
# title: old_object
# description: The request's oldObject, {} when missing (CREATE, audit) or not an object.
old_object := o if {
	o := input.review.oldObject
	is_object(o)
} else := {}

# METADATA
# title: is_update
# description: An UPDATE carrying both objects; never true in audit.
is_update if {
	input.review.operation == "UPDATE"
	is_object(input.review.oldObject)
	is_object(input.review.object)
}

# METADATA
# title: applies_to
# description: The request's operation is one of `operations`, or there is none (audit).
applies_to(operations) if input.review.operation in operations

applies_to(_) if is_audit

# METADATA
# title: is_audit
# description: >-
#   No operation: Gatekeeper's audit and gator's bare objects review a stored object with
#   operation "" (and oldObject null); a caller that leaves the key out is treated the same.
is_audit if get(input.review, ["operation"], "") == ""

# METADATA
# title: get
# description: >-
#   object.get that also accepts a non-object (and then returns the default). One body with an
#   else, not two guarded bodies: OPA evaluates every body of a function, and this is the most
#   called function of the bundle (a quarter of a review's evaluation steps with two bodies).
get(value, path, fallback) := object.get(value, path, fallback) if {
	is_object(value)
} else := fallback

# METADATA
# title: array
# description: The value when it is an array, else [].
array(value) := value if {
	is_array(value)
} else := []
