# METADATA
# title: Semantic equality of API values
# description: >-
#   Equality as Kubernetes' equality.Semantic.DeepEqual sees it: absent, null, [] and {} are equal at
#   every level, list order matters, and resource quantities (values under `requests`/`limits` and
#   `sizeLimit`) compare by value, so `1000m` equals `1` and `1Gi` equals `1024Mi`.
package lib.trainer.semantic

import data.lib.trainer.quantity

# METADATA
# title: same
# description: a and b are semantically equal.
same(a, b) if a == b

# Lists of the same length: only the entries that differ structurally are walked.
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
    leaves(a) == leaves(b)
}

same_length_lists(a, b) if {
    is_array(a)
    is_array(b)
    count(a) == count(b)
}

same_entry(x, y) if x == y

same_entry(x, y) if {
    x != y
    leaves(x) == leaves(y)
}

# METADATA
# title: leaves
# description: The set of [path, value] of every non-null scalar, quantities normalized.
leaves(x) := {[path, normalized(path, value)] |
    walk(x, [path, value])
    scalar(value)
}

scalar(value) if {
    not is_object(value)
    not is_array(value)
    value != null
}

normalized(path, value) := ["quantity", q] if {
    quantity_path(path)
    q := quantity.parse(value)
} else := value

quantity_path(path) if path[count(path) - 2] in {"requests", "limits"}

quantity_path(path) if path[count(path) - 1] == "sizeLimit"
