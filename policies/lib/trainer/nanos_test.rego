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

test_not_a_quantity_long_exponent if {
	not parse("1e1000")
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
