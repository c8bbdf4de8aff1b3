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

parse_text(text) := value if {
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

power_of_ten(0) := 1

power_of_ten(n) := to_number(concat("", ["1", concat("", ["0" | some _ in numbers.range(1, n)])])) if n > 0

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
