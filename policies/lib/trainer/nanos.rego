# METADATA
# title: Exact Kubernetes quantities
# description: >-
#   Kubernetes quantities (`500m`, `1.5Gi`, `2e3`, `1e308`, `1k`, `100M`, `.5`, `5n`) as exact integers of
#   nano-units, parsed as apimachinery's ParseQuantity does: any decimal exponent that fits int64 (wrapped to
#   int32, as apimachinery does), more than nine fractional digits round up (away from zero) to the next
#   nano-unit, binary-SI values cap at 2^63-1 units. Values from `beyond` (10^1000 nano-units) on are
#   `beyond`: no budget needs them, and they are compared as "at least that". Mantissas of more than
#   `max_digits` significant digits are not parsed. Only integer arithmetic and comparison are used;
#   `to_number` only ever sees at most 19 plain digits, so no builtin here can fail on a legal value
#   (Gatekeeper would silently make it undefined). The OPA of every Gatekeeper release rounds arithmetic
#   results to a 64-bit mantissa (open-policy-agent/opa#6281): exact up to 2^64 nano-units and for round
#   values such as `7Ei`; beyond, values closer than one part in 2^63 may compare equal there.
package lib.trainer.nanos

pattern := `^([+-]?)([0-9]*)(?:\.([0-9]*))?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE]([+-]?[0-9]+))?$`

decimal_suffix := {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

binary_suffix := {"Ki": 1024, "Mi": 1048576, "Gi": 1073741824, "Ti": 1099511627776, "Pi": 1125899906842624, "Ei": 1152921504606846976}

max_binary := 9223372036854775807000000000

# METADATA
# title: beyond
# description: The smallest value that is not exact (10^1000 nano-units); larger values are parsed as this.
beyond := power_of_ten(1000)

# METADATA
# title: beyond_text
# description: >-
#   beyond in whole units, as text: format(beyond) is exact only where OPA's integers are (not in any
#   Gatekeeper release's OPA).
beyond_text := "1e991"

max_digits := 1100

# METADATA
# title: parse
# description: >-
#   The quantity in nano-units; undefined when the value is not a quantity. A JSON number is parsed from
#   its text, as apimachinery does.
parse(q) := parse_text(sprintf("%v", [q])) if is_number(q)

parse(q) := parse_text(q) if is_string(q)

# Fast paths (builtins only, on few enough digits that to_number is exact and cannot fail) for the spellings
# nearly every object uses: `8`, `500m`, `16Gi`, `4k`; the general path below gives the same values, and the
# lib's tests check both.
parse_text(text) := to_number(text) * 1000000000 if {
	short_digits(text)
} else := to_number(body) * 1000000 if {
	endswith(text, "m")
	body := trim_suffix(text, "m")
	short_digits(body)
} else := to_number(body) * multiplier if {
	count(text) > 2
	suffix := substring(text, count(text) - 2, 2)
	multiplier := fast_binary[suffix]
	body := substring(text, 0, count(text) - 2)
	count(body) <= 6
	short_digits(body)
} else := to_number(body) * multiplier if {
	count(text) > 1
	suffix := substring(text, count(text) - 1, 1)
	multiplier := fast_decimal[suffix]
	body := substring(text, 0, count(text) - 1)
	short_digits(body)
} else := general(text)

# 1 to 15 decimal digits without a leading zero: a JSON integer to_number reads exactly.
short_digits(text) if {
	text != ""
	count(text) <= 15
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
	value := signed(sign, magnitude(concat("", [whole, fraction]), count(fraction), decimal, multiplier))
}

exponents(_, exponent) := [e, 1] if {
	exponent != ""
	e := exponent_value(exponent)
}

exponents(suffix, "") := [decimal, 1] if decimal := decimal_suffix[suffix]

exponents(suffix, "") := [0, multiplier] if multiplier := binary_suffix[suffix]

# apimachinery: strconv.ParseInt(exponent, 10, 64), then int32(...): an exponent outside int64 is not a
# quantity, one outside int32 wraps around.
exponent_value(text) := wrap_int32(value) if {
	body := trim_left(trim_left(text, "+-"), "0")
	count(body) <= 19
	value := signed_exponent(startswith(text, "-"), small(body))
	value >= -9223372036854775808
	value <= 9223372036854775807
}

signed_exponent(true, n) := 0 - n

signed_exponent(false, n) := n

wrap_int32(n) := ((((n + 2147483648) % 4294967296) + 4294967296) % 4294967296) - 2147483648

# The value of `all` (decimal digits, the last `fraction` of them after the point) x multiplier x
# 10^(decimal + 9), rounded up to a whole nano-unit; beyond (or max_binary) where it is at least that.
magnitude(all, _, _, _) := 0 if trim_left(all, "0") == ""

magnitude(all, fraction, decimal, multiplier) := scaled(digits_text, shift, multiplier) if {
	significant := trim_left(all, "0")
	significant != ""
	digits_text := trim_right(significant, "0")
	count(digits_text) <= max_digits
	shift := ((decimal + 9) - fraction) + (count(significant) - count(digits_text))
}

# Decimal: digits_text has no trailing zero, so dropping digits always drops a non-zero one (round up by 1).
scaled(text, shift, 1) := beyond if {
	count(text) + shift > 1000
} else := digits(text) * power_of_ten(shift) if {
	shift >= 0
} else := 1 if {
	count(text) + shift <= 0
} else := digits(substring(text, 0, count(text) + shift)) + 1

# Binary-SI: capped at max_binary (2^63-1 units); 10^29 x 1024 nano-units is already above it.
scaled(text, shift, multiplier) := max_binary if {
	multiplier > 1
	count(text) + shift > 29
} else := min([(digits(text) * multiplier) * power_of_ten(shift), max_binary]) if {
	multiplier > 1
	shift >= 0
} else := min([round_up(sprintf("%d", [digits(text) * multiplier]), shift), max_binary]) if {
	multiplier > 1
}

# The integer of decimal digits `text` divided by 10^-shift (shift < 0), rounded up.
round_up(text, shift) := kept + carry if {
	cut := count(text) + shift
	kept := leading(text, cut)
	carry := rounding(text, cut)
}

leading(text, cut) := digits(substring(text, 0, cut)) if cut > 0

leading(_, cut) := 0 if cut <= 0

rounding(text, cut) := 1 if {
	trim_left(substring(text, max([cut, 0]), -1), "0") != ""
} else := 0

signed("-", magnitude) := 0 - magnitude

signed(sign, magnitude) := magnitude if sign != "-"

# small: at most 19 decimal digits (leading zeros allowed) as an exact integer; to_number reads them exactly.
small(text) := 0 if trim_left(text, "0") == ""

small(text) := to_number(trim_left(text, "0")) if trim_left(text, "0") != ""

# digits: any number of decimal digits as an exact integer, 18 at a time (to_number cannot fail on them).
digits(text) := small(text) if count(text) <= 18

digits(text) := total([(small(chunk(text, i)) * power_of_ten(18 * i)) | some i in numbers.range(0, floor((count(text) - 1) / 18))]) if {
	count(text) > 18
}

# The i-th group of 18 digits from the right.
chunk(text, i) := substring(text, start, end - start) if {
	end := count(text) - (18 * i)
	start := max([end - 18, 0])
}

power_of_ten(n) := powers_of_ten[n] if {
	n < count(powers_of_ten)
} else := product([1000000000000000000 | some i in numbers.range(1, floor(n / 18)); i >= 1]) * powers_of_ten[n % 18]

# 10^0 .. 10^18
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
]

# METADATA
# title: total
# description: >-
#   The sum of an array of numbers that never wraps. The `sum` of the OPA in Gatekeeper 3.20 to 3.23 adds an
#   array of integers in a 64-bit integer that wraps past 2^63; one non-integer element (`0.0`) sends it to the
#   arbitrary-precision path that `+` takes.
total(values) := sum(array.concat(values, [0.0]))

# METADATA
# title: ceil_units
# description: The quantity's whole units, rounded up (apimachinery's Value()), from nano-units.
ceil_units(nanos) := 0 - floor_units(0 - nanos) if nanos < 0

ceil_units(nanos) := floor_units(nanos) + rounding(sprintf("%d", [nanos]), count(sprintf("%d", [nanos])) - 9) if nanos >= 0

floor_units(nanos) := leading(sprintf("%d", [nanos]), count(sprintf("%d", [nanos])) - 9)

# METADATA
# title: format
# description: >-
#   A quantity string of the same value: whole units when exact (with an exponent from 10^18 units on),
#   else `m`, `u` or `n` units.
format(nanos) := "0" if nanos == 0

format(nanos) := concat("", [sign_text(nanos), format_text(trim_prefix(sprintf("%d", [nanos]), "-"))]) if nanos != 0

sign_text(nanos) := "-" if nanos < 0

sign_text(nanos) := "" if nanos > 0

# The digits of a positive number of nano-units.
format_text(text) := units_text(substring(text, 0, count(text) - 9)) if {
	endswith(text, "000000000")
} else := trim_digits(text, 6, "m") if {
	endswith(text, "000000")
} else := trim_digits(text, 3, "u") if {
	endswith(text, "000")
} else := concat("", [text, "n"])

# From 10^18 units on, trailing zeros become an exponent (`1e308`).
units_text(units) := sprintf("%se%d", [mantissa, count(units) - count(mantissa)]) if {
	count(units) > 18
	mantissa := trim_right(units, "0")
	mantissa != units
} else := units

trim_digits(text, n, suffix) := concat("", [substring(text, 0, count(text) - n), suffix])

# METADATA
# title: describe
# description: format, or "at least <beyond>" for a value that is beyond exact comparison.
describe(nanos) := sprintf("at least %s", [beyond_text]) if nanos >= beyond

describe(nanos) := format(nanos) if nanos < beyond
