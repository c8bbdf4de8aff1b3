# METADATA
# title: Semantic equality of API values
# description: >-
#   Equality as Kubernetes' equality.Semantic.DeepEqual sees it: absent, null, [] and {} are equal at
#   every level, lists of different lengths are never equal, list order matters, and resource
#   quantities (values under `requests`/`limits` and `sizeLimit`) compare by value, so `1000m` equals
#   `1` and `1Gi` equals `1024Mi`.
package lib.trainer.semantic

import data.lib.trainer.nanos

# METADATA
# title: same
# description: a and b are semantically equal.
same(a, b) if not a != b # as the condition, `a == b` costs many times one `!=` on long lists (docs/performance.md)

# The values are compared top down: only the entries (by key or index) that differ structurally are
# followed, and only the pairs whose structure differs, or that are no longer followed, are compared
# fact by fact. Pairs are sets of [context, x, y], so equal differences (the same quantity rewritten
# in every override) are compared once. Sixteen levels reach the env values of a runtime patch's containers
# (patch, trainingRuntimeSpec, template, spec, replicatedJobs, job, template, spec, template, spec, containers,
# container, env, entry, value): pairs left at the last level are walked for their facts, and walking a job's whole
# pod costs far more than following the few keys where it differs.
same(a, b) if {
	a != b
	not apart(a, b)
	d0 := {[[null, null], a, b]}
	d1 := differing_children(d0)
	d2 := differing_children(d1)
	d3 := differing_children(d2)
	d4 := differing_children(d3)
	d5 := differing_children(d4)
	d6 := differing_children(d5)
	d7 := differing_children(d6)
	d8 := differing_children(d7)
	d9 := differing_children(d8)
	d10 := differing_children(d9)
	d11 := differing_children(d10)
	d12 := differing_children(d11)
	d13 := differing_children(d12)
	d14 := differing_children(d13)
	d15 := differing_children(d14)
	compared := ends(((((((((((((((d0 | d1) | d2) | d3) | d4) | d5) | d6) | d7) | d8) | d9) | d10) | d11) | d12) | d13) | d14)) | d15
	every pair in compared {
		same_pair(pair)
	}
}

# METADATA
# title: apart
# description: >-
#   a and b differ in a way no normalization removes: somewhere along entries that differ, two different
#   non-null scalars outside a quantity, or two lists of different lengths. Searched depth first, and each level
#   stops at the first such difference (a function with a constant value), so an UPDATE that changes its
#   overrides is told apart after following one path, not after comparing every override. Finding none proves
#   nothing: `same` then compares level by level.
apart(a, b) if apart0([null, null], a, b)

# Sixteen levels, as `same` follows; Rego has no recursion.
apart0(c, x, y) if definite(c, x, y)

apart0(c, x, y) if {
	not long_array(x)
	some k, v in x
	w := y[k]
	v != w
	apart1([c[1], k], v, w)
}

apart0(c, x, y) if {
	some j in differing_chunks(x, y)
	some i, v in array.slice(x, j, j + chunk)
	w := y[j + i]
	v != w
	apart1([c[1], j + i], v, w)
}

apart1(c, x, y) if definite(c, x, y)

apart1(c, x, y) if {
	not long_array(x)
	some k, v in x
	w := y[k]
	v != w
	apart2([c[1], k], v, w)
}

apart1(c, x, y) if {
	some j in differing_chunks(x, y)
	some i, v in array.slice(x, j, j + chunk)
	w := y[j + i]
	v != w
	apart2([c[1], j + i], v, w)
}

apart2(c, x, y) if definite(c, x, y)

apart2(c, x, y) if {
	not long_array(x)
	some k, v in x
	w := y[k]
	v != w
	apart3([c[1], k], v, w)
}

apart2(c, x, y) if {
	some j in differing_chunks(x, y)
	some i, v in array.slice(x, j, j + chunk)
	w := y[j + i]
	v != w
	apart3([c[1], j + i], v, w)
}

apart3(c, x, y) if definite(c, x, y)

apart3(c, x, y) if {
	not long_array(x)
	some k, v in x
	w := y[k]
	v != w
	apart4([c[1], k], v, w)
}

apart3(c, x, y) if {
	some j in differing_chunks(x, y)
	some i, v in array.slice(x, j, j + chunk)
	w := y[j + i]
	v != w
	apart4([c[1], j + i], v, w)
}

apart4(c, x, y) if definite(c, x, y)

apart4(c, x, y) if {
	not long_array(x)
	some k, v in x
	w := y[k]
	v != w
	apart5([c[1], k], v, w)
}

apart4(c, x, y) if {
	some j in differing_chunks(x, y)
	some i, v in array.slice(x, j, j + chunk)
	w := y[j + i]
	v != w
	apart5([c[1], j + i], v, w)
}

apart5(c, x, y) if definite(c, x, y)

apart5(c, x, y) if {
	not long_array(x)
	some k, v in x
	w := y[k]
	v != w
	apart6([c[1], k], v, w)
}

apart5(c, x, y) if {
	some j in differing_chunks(x, y)
	some i, v in array.slice(x, j, j + chunk)
	w := y[j + i]
	v != w
	apart6([c[1], j + i], v, w)
}

apart6(c, x, y) if definite(c, x, y)

apart6(c, x, y) if {
	not long_array(x)
	some k, v in x
	w := y[k]
	v != w
	apart7([c[1], k], v, w)
}

apart6(c, x, y) if {
	some j in differing_chunks(x, y)
	some i, v in array.slice(x, j, j + chunk)
	w := y[j + i]
	v != w
	apart7([c[1], j + i], v, w)
}

apart7(c, x, y) if definite(c, x, y)

apart7(c, x, y) if {
	not long_array(x)
	some k, v in x
	w := y[k]
	v != w
	apart8([c[1], k], v, w)
}

apart7(c, x, y) if {
	some j in differing_chunks(x, y)
	some i, v in array.slice(x, j, j + chunk)
	w := y[j + i]
	v != w
	apart8([c[1], j + i], v, w)
}

apart8(c, x, y) if definite(c, x, y)

apart8(c, x, y) if {
	not long_array(x)
	some k, v in x
	w := y[k]
	v != w
	apart9([c[1], k], v, w)
}

apart8(c, x, y) if {
	some j in differing_chunks(x, y)
	some i, v in array.slice(x, j, j + chunk)
	w := y[j + i]
	v != w
	apart9([c[1], j + i], v, w)
}

apart9(c, x, y) if definite(c, x, y)

apart9(c, x, y) if {
	not long_array(x)
	some k, v in x
	w := y[k]
	v != w
	apart10([c[1], k], v, w)
}

apart9(c, x, y) if {
	some j in differing_chunks(x, y)
	some i, v in array.slice(x, j, j + chunk)
	w := y[j + i]
	v != w
	apart10([c[1], j + i], v, w)
}

apart10(c, x, y) if definite(c, x, y)

apart10(c, x, y) if {
	not long_array(x)
	some k, v in x
	w := y[k]
	v != w
	apart11([c[1], k], v, w)
}

apart10(c, x, y) if {
	some j in differing_chunks(x, y)
	some i, v in array.slice(x, j, j + chunk)
	w := y[j + i]
	v != w
	apart11([c[1], j + i], v, w)
}

apart11(c, x, y) if definite(c, x, y)

apart11(c, x, y) if {
	not long_array(x)
	some k, v in x
	w := y[k]
	v != w
	apart12([c[1], k], v, w)
}

apart11(c, x, y) if {
	some j in differing_chunks(x, y)
	some i, v in array.slice(x, j, j + chunk)
	w := y[j + i]
	v != w
	apart12([c[1], j + i], v, w)
}

apart12(c, x, y) if definite(c, x, y)

apart12(c, x, y) if {
	not long_array(x)
	some k, v in x
	w := y[k]
	v != w
	apart13([c[1], k], v, w)
}

apart12(c, x, y) if {
	some j in differing_chunks(x, y)
	some i, v in array.slice(x, j, j + chunk)
	w := y[j + i]
	v != w
	apart13([c[1], j + i], v, w)
}

apart13(c, x, y) if definite(c, x, y)

apart13(c, x, y) if {
	not long_array(x)
	some k, v in x
	w := y[k]
	v != w
	apart14([c[1], k], v, w)
}

apart13(c, x, y) if {
	some j in differing_chunks(x, y)
	some i, v in array.slice(x, j, j + chunk)
	w := y[j + i]
	v != w
	apart14([c[1], j + i], v, w)
}

apart14(c, x, y) if definite(c, x, y)

apart14(c, x, y) if {
	not long_array(x)
	some k, v in x
	w := y[k]
	v != w
	apart15([c[1], k], v, w)
}

apart14(c, x, y) if {
	some j in differing_chunks(x, y)
	some i, v in array.slice(x, j, j + chunk)
	w := y[j + i]
	v != w
	apart15([c[1], j + i], v, w)
}

apart15(c, x, y) if definite(c, x, y)

# METADATA
# title: chunk
# description: >-
#   Lists longer than this are compared a chunk at a time: an equal chunk is passed over in one comparison, so a
#   long list that differs in a few entries costs a comparison per chunk, not an evaluation step per entry.
chunk := 128

long_array(x) if {
	is_array(x)
	count(x) > chunk
}

# METADATA
# title: differing_chunks
# description: >-
#   The first index of each chunk in which two long lists of the same length differ (empty for anything else).
differing_chunks(x, y) := {j |
	long_array(x)
	is_array(y)
	count(x) == count(y)
	some j in numbers.range_step(0, count(x) - 1, chunk)
	array.slice(x, j, j + chunk) != array.slice(y, j, j + chunk)
}

# x and y (known to differ) differ whatever normalization does: two lists of different lengths, or two
# non-null scalars that are not a quantity (a quantity may be spelled two ways).
definite(_, x, y) if {
	is_array(x)
	is_array(y)
	count(x) != count(y)
}

definite(c, x, y) if {
	not is_object(x)
	not is_array(x)
	x != null
	not is_object(y)
	not is_array(y)
	y != null
	not quantity_path(c)
}

# [context, x, y] of the entries of two objects, or of two lists of the same length, that differ
# (absent and null alike). The context is the last two keys of the path, indices as null: only keys
# matter to quantity_path, and equal differences in different list entries become one pair.
differing_children(pairs) := (({[[c[1], k], v, w] |
	some [c, x, y] in pairs
	is_object(x)
	is_object(y)
	some k, v in x
	w := object.get(y, [k], null)
	v != w
} | {[[c[1], k], null, w] |
	some [c, x, y] in pairs
	is_object(x)
	is_object(y)
	some k, w in object.remove(y, x)
	w != null
}) | {[[c[1], null], v, w] |
	some [c, x, y] in pairs
	is_array(x)
	not long_array(x)
	is_array(y)
	count(x) == count(y)
	some i, v in x
	w := y[i]
	v != w
}) | {[[c[1], null], v, w] |
	some [c, x, y] in pairs
	some j in differing_chunks(x, y)
	some i, v in array.slice(x, j, j + chunk)
	w := y[j + i]
	v != w
}

followed := {"object": {"object": true}, "array": {"array": true}}

# The pairs whose entries are not followed: not two objects, not two lists of the same length.
ends(pairs) := {pair |
	some pair in pairs
	not object.get(followed, [type_name(pair[1]), type_name(pair[2])], false)
} | {pair |
	some pair in pairs
	is_array(pair[1])
	is_array(pair[2])
	count(pair[1]) != count(pair[2])
}

# Two lists of different lengths are never the same (without comparing their facts, which costs a walk of
# both); two different scalars (neither null) are the same only as quantities of equal value; any other pair
# compares by facts.
same_pair([context, x, y]) := false if {
	is_array(x)
	is_array(y)
	count(x) != count(y)
} else := same_quantity(context, x, y) if {
	not is_object(x)
	not is_array(x)
	x != null
	not is_object(y)
	not is_array(y)
	y != null
} else := same_facts(context, x, y)

same_quantity(context, x, y) if {
	quantity_path(context)
	nanos.parse(x) == nanos.parse(y)
} else := false

# Facts present on one side only are compared after quantity normalization: facts common to both
# sides are equal by construction, so the (costly) quantity parsing runs only where values differ.
same_facts(context, x, y) if {
	facts_x := facts(x)
	facts_y := facts(y)
	normalized(context, facts_x - facts_y) == normalized(context, facts_y - facts_x)
} else := false

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

normalized(context, facts) := {[path, normalized_value(array.concat(context, path), value)] |
	some [path, value] in facts
}

normalized_value(path, value) := ["quantity", q] if {
	quantity_path(path)
	q := nanos.parse(value)
} else := value

quantity_path(path) if path[count(path) - 2] in {"requests", "limits"}

quantity_path(path) if path[count(path) - 1] == "sizeLimit"
