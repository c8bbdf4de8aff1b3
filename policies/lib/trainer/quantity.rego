# METADATA
# title: Kubernetes resource quantities
# description: >-
#   Parses Kubernetes quantities (`1000m`, `1`, `1Gi`, `1024Mi`, `1k`, `1e3`, `5n`, `2u`) to numbers so
#   they compare by value. Only strings that match the Kubernetes grammar are parsed: units.parse
#   never sees anything it could fail on (it does not know `n` and `u`, handled here).
package lib.trainer.quantity

pattern := `^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]{1,3})?$`

# METADATA
# title: parse
# description: The quantity's value; undefined when the value is not a quantity.
parse(q) := q if is_number(q)

parse(q) := value if {
	is_string(q)
	regex.match(pattern, q)
	value := scaled(q)
}

scaled(q) := units.parse(trim_suffix(q, "n")) / 1000000000 if endswith(q, "n")

scaled(q) := units.parse(trim_suffix(q, "u")) / 1000000 if endswith(q, "u")

scaled(q) := units.parse(q) if {
	not endswith(q, "n")
	not endswith(q, "u")
}
