# METADATA
# title: Semantic equality of API values
# description: >-
#   Equality as Kubernetes' equality.Semantic.DeepEqual sees it: absent, null, [] and {} are equal at
#   every level, lists of different lengths are never equal, list order matters, and resource
#   quantities (values under `requests`/`limits` and `sizeLimit`) compare by value, so `1000m` equals
#   `1` and `1Gi` equals `1024Mi`.
package lib.trainer.semantic

import data.lib.trainer.quantity

# METADATA
# title: same
# description: a and b are semantically equal.
same(a, b) if a == b

# Lists of the same length: only the entries that differ structurally are examined.
same(a, b) if {
	a != b
	same_length_lists(a, b)
	every i, x in a {
		same_entry(x, b[i])
	}
}

same(a, b) if {
	a != b
	not same_length_lists(a, b)
	same_entry(a, b)
}

same_length_lists(a, b) if {
	is_array(a)
	is_array(b)
	count(a) == count(b)
}

same_entry(x, y) if x == y

# Facts present on one side only are compared after quantity normalization: facts common to both
# sides are equal by construction, so the (costly) quantity parsing runs only where values differ.
same_entry(x, y) if {
	x != y
	facts_x := facts(x)
	facts_y := facts(y)
	normalized(facts_x - facts_y) == normalized(facts_y - facts_x)
}

# METADATA
# title: facts
# description: >-
#   [path, value] of every non-null scalar and [path, {"length": n}] of every non-empty list: two
#   values have the same facts exactly when they are equal up to absent/null/[]/{}.
facts(x) := scalar_facts(x) | length_facts(x)

# The comprehensions call no function per node: a function call per node costs several times the walk.
scalar_facts(x) := {[path, value] |
	walk(x, [path, value])
	not is_object(value)
	not is_array(value)
	value != null
}

length_facts(x) := {[path, {"length": count(value)}] |
	walk(x, [path, value])
	is_array(value)
	count(value) > 0
}

normalized(facts) := {[path, normalized_value(path, value)] | some [path, value] in facts}

normalized_value(path, value) := ["quantity", q] if {
	quantity_path(path)
	q := quantity.parse(value)
} else := value

quantity_path(path) if path[count(path) - 2] in {"requests", "limits"}

quantity_path(path) if path[count(path) - 1] == "sizeLimit"
