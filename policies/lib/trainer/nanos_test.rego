package lib.trainer.nanos

test_parse_milli if {
	parse("500m") == 500000000
}

test_parse_binary_fraction if {
	parse("1.5Gi") == 1610612736000000000
}

test_parse_exponent if {
	parse("2e3") == 2000000000000
}

test_parse_upper_exponent if {
	parse("1E3") == 1000000000000
}

test_parse_negative_exponent if {
	parse("1e-3") == 1000000
}

test_parse_signed_exponent if {
	parse("1e+3") == 1000000000000
}

test_parse_kilo if {
	parse("1k") == 1000000000000
}

test_parse_mega if {
	parse("100M") == 100000000000000000
}

test_parse_exa if {
	parse("1E") == 1000000000000000000000000000
}

test_parse_leading_dot if {
	parse(".5") == 500000000
}

test_parse_trailing_dot if {
	parse("5.") == 5000000000
}

test_parse_plus if {
	parse("+1") == 1000000000
}

test_parse_negative if {
	parse("-1.5") == -1500000000
}

test_parse_nano if {
	parse("5n") == 5
}

test_parse_micro if {
	parse("2u") == 2000
}

test_parse_leading_zeros if {
	parse("007") == 7000000000
}

test_parse_rounds_up_to_nano if {
	parse("0.0000000001") == 1
}

test_parse_rounds_up_binary if {
	parse("0.0000000001Ki") == 103
}

test_parse_negative_rounds_away_from_zero if {
	parse("-0.0000000001") == -1
}

test_parse_tiny_exponent if {
	parse("1e-999") == 1
}

test_parse_binary_cap if {
	parse("9223372036854775808Ei") == 9223372036854775807000000000
}

test_parse_integer_number if {
	parse(8) == 8000000000
}

test_parse_fraction_number if {
	parse(1.5) == 1500000000
}

test_not_a_quantity_word if {
	not parse("abc")
}

test_not_a_quantity_lower_binary if {
	not parse("1gi")
}

test_not_a_quantity_bare_exponent if {
	not parse("1e")
}

test_not_a_quantity_dot if {
	not parse(".")
}

test_not_a_quantity_empty if {
	not parse("")
}

test_parse_exponent_308 if {
	parse("1e308") == power_of_ten(317)
}

test_parse_number_1e308 if {
	parse(1e308) == power_of_ten(317)
}

test_parse_largest_exact if {
	parse("9e990") == 9 * power_of_ten(999)
}

test_parse_long_exponent_is_beyond if {
	parse("1e1000") == beyond
}

test_parse_huge_exponent_is_beyond if {
	parse("1e99999") == beyond
}

test_parse_negative_beyond if {
	parse("-2e99999") == 0 - beyond
}

test_parse_exponent_wraps_like_int32 if {
	# apimachinery: int32(ParseInt("4294967296")) is 0
	parse("1e4294967296") == 1000000000
}

test_parse_exponent_wraps_negative if {
	# int32(2147483648) is -2147483648: a positive exponent that rounds up to one nano-unit
	parse("5e2147483648") == 1
}

test_parse_exponent_with_leading_zeros if {
	parse("1e+0003") == 1000000000000
}

test_not_a_quantity_exponent_beyond_int64 if {
	not parse("1e9223372036854775808")
}

test_parse_exponent_int64_max if {
	# 9223372036854775807 is -1 as an int32
	parse("1e9223372036854775807") == 100000000
}

test_not_a_quantity_fraction_exponent if {
	not parse("1e1.5")
}

test_parse_long_mantissa if {
	parse(concat("", ["1", concat("", ["0" | some _ in numbers.range(1, 400)]), "m"])) == power_of_ten(406)
}

test_parse_long_fraction_rounds_up if {
	parse(concat("", ["0.", concat("", ["0" | some _ in numbers.range(1, 500)]), "1"])) == 1
}

# 1024 x (1 + 10^-10) units = 1024000000102.4 nano-units, rounded up. (A fraction of hundreds of digits times
# 1024 is beyond the 64-bit mantissa Gatekeeper's OPA keeps: its last nano-unit is lost there.)
test_parse_long_binary_fraction if {
	parse("1.0000000001Ki") == 1024000000103
}

test_parse_long_binary_fraction_exact_part if {
	parse(concat("", ["1.", concat("", ["0" | some _ in numbers.range(1, 500)]), "1Ki"])) >= 1024000000000
}

test_not_a_quantity_exponent_and_suffix if {
	not parse("1e0Ki")
}

test_parse_huge_binary_mantissa_caps if {
	parse(concat("", ["1", concat("", ["0" | some _ in numbers.range(1, 40)]), "Ki"])) == max_binary
}

test_not_a_quantity_too_many_digits if {
	not parse(concat("", ["1", concat("", ["2" | some _ in numbers.range(1, 1100)])]))
}

test_parse_many_zeros_are_not_digits if {
	parse(concat("", ["1", concat("", ["0" | some _ in numbers.range(1, 1100)]), "n"])) == beyond
}

test_parse_19_digits if {
	parse("1234567890123456789") == 1234567890123456789000000000
}

test_parse_zero_exponent_zero if {
	parse("0e99999") == 0
}

test_equal_milli_equals_one if {
	parse("1000m") == parse("1")
}

test_equal_gi_equals_1024_mi if {
	parse("1Gi") == parse("1024Mi")
}

test_equal_exponent_equals_k if {
	parse("1e3") == parse("1k")
}

test_equal_ei if {
	parse("1Ei") == parse("1024Pi")
}

test_equal_number_and_string if {
	parse("3") == parse(3)
}

test_ceil_units if {
	[ceil_units(0), ceil_units(1), ceil_units(1000000000), ceil_units(1500000000), ceil_units(-1500000000)] == [0, 1, 1, 2, -1]
}

test_format_exponent if {
	format(parse("1e308")) == "1e308"
}

# The largest values every OPA keeps exact: any digits below 2^64 nano-units, round binary values above.
test_format_large_exact if {
	format(parse("18446744073709551615n")) == "18446744073709551615n"
	format(parse("123456789012")) == "123456789012"
	format(parse("7Ei")) == "8070450532247928832"
}

test_format_negative if {
	format(-1500000000) == "-1500m"
}

test_describe_beyond if {
	describe(parse("1e99999")) == "at least 1e991"
}

test_not_a_quantity_space if {
	not parse(" 1")
}

test_not_a_quantity_null if {
	not parse(null)
}

test_not_a_quantity_boolean if {
	not parse(true)
}

test_not_a_quantity_list if {
	not parse([1])
}

test_format_0 if {
	format(1) == "1n"
}

test_format_1 if {
	format(1000) == "1u"
}

test_format_2 if {
	format(1000000) == "1m"
}

test_format_3 if {
	format(1000000000) == "1"
}

test_format_4 if {
	format(1500000000) == "1500m"
}

test_format_5 if {
	format(-2000000000) == "-2"
}

test_format_6 if {
	format(0) == "0"
}

test_format_7 if {
	format(1610612736000000000) == "1610612736"
}

# The sums of the OPA in Gatekeeper 3.20 to 3.23 wrap past 2^63: total must not, on any of them.
test_total_past_int64 if {
	total([9223372036854775807, 1]) == 9223372036854775808
}

test_total_of_many_int64_values if {
	total([parse("5Gi") | some _ in numbers.range(1, 128)]) == parse("640Gi")
}

test_total_far_above_int64 if {
	total([parse("1Ei"), parse("1Ei"), 9223372036854775807]) == parse("2Ei") + 9223372036854775807
}

test_total_of_nothing if {
	total([]) == 0
}

test_total_small_integers if {
	total([1, 2, 3]) == 6
}

test_digits_past_int64 if {
	digits("9223372036854775808") == 9223372036854775808
}
