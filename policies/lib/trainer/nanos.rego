# METADATA
# title: Exact Kubernetes quantities
# description: >-
#   Kubernetes quantities (`500m`, `1.5Gi`, `2e3`, `1k`, `100M`, `.5`, `5n`) as exact integers of
#   nano-units, parsed as apimachinery's ParseQuantity does: more than nine fractional digits round up
#   (away from zero) to the next nano-unit, binary-SI values cap at 2^63-1 units. Only integer
#   addition, multiplication and comparison are used (exact in OPA for any size); division, which OPA
#   does in floating point, is done on decimal digit strings. Decimal exponents have at most three digits.
package lib.trainer.nanos

pattern := `^([+-]?)([0-9]*)(?:\.([0-9]*))?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE]([+-]?[0-9]{1,3}))?$`

decimal_suffix := {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

binary_suffix := {"Ki": 1024, "Mi": 1048576, "Gi": 1073741824, "Ti": 1099511627776, "Pi": 1125899906842624, "Ei": 1152921504606846976}

max_binary := 9223372036854775807000000000

# METADATA
# title: parse
# description: >-
#   The quantity in nano-units; undefined when the value is not a quantity. A JSON number is parsed from
#   its text, as apimachinery does.
parse(q) := parse_text(sprintf("%v", [q])) if is_number(q)

parse(q) := parse_text(q) if is_string(q)

# Fast paths (builtins only) for the spellings nearly every object uses: `8`, `500m`, `16Gi`, `4k`; the
# general path below gives the same values, and the lib's tests check both.
parse_text(text) := to_number(text) * 1000000000 if {
	plain_digits(text)
} else := to_number(body) * 1000000 if {
	endswith(text, "m")
	body := trim_suffix(text, "m")
	plain_digits(body)
} else := to_number(body) * multiplier if {
	count(text) > 2
	suffix := substring(text, count(text) - 2, 2)
	multiplier := fast_binary[suffix]
	body := substring(text, 0, count(text) - 2)
	count(body) <= 6
	plain_digits(body)
} else := to_number(body) * multiplier if {
	count(text) > 1
	suffix := substring(text, count(text) - 1, 1)
	multiplier := fast_decimal[suffix]
	body := substring(text, 0, count(text) - 1)
	plain_digits(body)
} else := general(text)

# A non-empty run of decimal digits without a leading zero: a valid JSON integer for to_number.
plain_digits(text) if {
	text != ""
	trim_left(text, "0123456789") == ""
	not startswith(text, "0")
}

fast_binary := {"Ki": 1024000000000, "Mi": 1048576000000000, "Gi": 1073741824000000000, "Ti": 1099511627776000000000}

fast_decimal := {"k": 1000000000000, "M": 1000000000000000, "G": 1000000000000000000}

general(text) := value if {
	found := regex.find_all_string_submatch_n(pattern, text, 1)
	count(found) == 1
	[_, sign, whole, fraction, suffix, exponent] := found[0]
	concat("", [whole, fraction]) != ""
	[decimal, multiplier] := exponents(suffix, exponent)
	magnitude := scaled(digits(concat("", [whole, fraction])) * multiplier, (decimal + 9) - count(fraction))
	value := signed(sign, capped(suffix, magnitude))
}

exponents(_, exponent) := [signed_integer(exponent), 1] if exponent != ""

exponents(suffix, "") := [decimal, 1] if decimal := decimal_suffix[suffix]

exponents(suffix, "") := [0, multiplier] if multiplier := binary_suffix[suffix]

signed_integer(text) := 0 - digits(trim_prefix(text, "-")) if startswith(text, "-")

signed_integer(text) := digits(trim_prefix(text, "+")) if not startswith(text, "-")

# digits: a string of decimal digits (leading zeros allowed) as an exact integer.
digits(text) := 0 if trim_left(text, "0") == ""

digits(text) := to_number(trim_left(text, "0")) if trim_left(text, "0") != ""

scaled(magnitude, shift) := magnitude * power_of_ten(shift) if shift >= 0

# Rounded up to whole nano-units: drop the last -shift decimal digits, add one if any was not zero.
scaled(magnitude, shift) := kept + carry if {
	shift < 0
	text := sprintf("%d", [magnitude])
	cut := count(text) + shift
	kept := leading(text, cut)
	carry := rounding(text, cut)
}

leading(text, cut) := digits(substring(text, 0, cut)) if cut > 0

leading(_, cut) := 0 if cut <= 0

rounding(text, cut) := 1 if {
	trim_left(substring(text, max([cut, 0]), -1), "0") != ""
} else := 0

power_of_ten(n) := powers_of_ten[n] if {
	n < count(powers_of_ten)
} else := to_number(concat("", ["1", concat("", ["0" | some _ in numbers.range(1, n)])]))

# 10^0 .. 10^30; larger powers (exponents up to e999) are built from digit strings.
powers_of_ten := [
	1,
	10,
	100,
	1000,
	10000,
	100000,
	1000000,
	10000000,
	100000000,
	1000000000,
	10000000000,
	100000000000,
	1000000000000,
	10000000000000,
	100000000000000,
	1000000000000000,
	10000000000000000,
	100000000000000000,
	1000000000000000000,
	10000000000000000000,
	100000000000000000000,
	1000000000000000000000,
	10000000000000000000000,
	100000000000000000000000,
	1000000000000000000000000,
	10000000000000000000000000,
	100000000000000000000000000,
	1000000000000000000000000000,
	10000000000000000000000000000,
	100000000000000000000000000000,
	1000000000000000000000000000000,
]

capped(suffix, magnitude) := max_binary if {
	binary_suffix[suffix]
	magnitude > max_binary
} else := magnitude

signed("-", magnitude) := 0 - magnitude

signed(sign, magnitude) := magnitude if sign != "-"

# METADATA
# title: format
# description: A quantity string of the same value, in whole units when exact, else `m`, `u` or `n` units.
format(nanos) := "0" if nanos == 0

format(nanos) := trim_digits(sprintf("%d", [nanos]), 9, "") if {
	nanos != 0
	endswith(sprintf("%d", [nanos]), "000000000")
}

format(nanos) := trim_digits(sprintf("%d", [nanos]), 6, "m") if {
	nanos != 0
	text := sprintf("%d", [nanos])
	not endswith(text, "000000000")
	endswith(text, "000000")
}

format(nanos) := trim_digits(sprintf("%d", [nanos]), 3, "u") if {
	nanos != 0
	text := sprintf("%d", [nanos])
	not endswith(text, "000000")
	endswith(text, "000")
}

format(nanos) := sprintf("%dn", [nanos]) if {
	nanos != 0
	not endswith(sprintf("%d", [nanos]), "000")
}

trim_digits(text, n, suffix) := concat("", [substring(text, 0, count(text) - n), suffix])
