package lib.trainer.quantity

test_equal_milli_equals_one if {
	parse("1000m") == parse("1")
}

test_equal_gi_equals_1024_mi if {
	parse("1Gi") == parse("1024Mi")
}

test_equal_k_equals_1000 if {
	parse("1k") == parse("1000")
}

test_equal_exponent_equals_k if {
	parse("1e3") == parse("1k")
}

test_equal_upper_exponent if {
	parse("1E3") == parse("1000")
}

test_equal_mega if {
	parse("2M") == parse("2000000")
}

test_equal_giga if {
	parse("1G") == parse("1000000000")
}

test_equal_tera if {
	parse("1T") == parse("1000000000000")
}

test_equal_nano if {
	parse("1000000000n") == parse("1")
}

test_equal_micro if {
	parse("1500u") == parse("1500000n")
}

test_equal_fraction if {
	parse("0.5") == parse("500m")
}

test_equal_leading_dot if {
	parse(".5Ki") == parse("512")
}

test_equal_negative_exponent if {
	parse("1e-3") == parse("1m")
}

test_equal_ki if {
	parse("1Ki") == parse("1024")
}

test_equal_ti_pi if {
	parse("1Pi") == parse("1024Ti")
}

test_equal_exa if {
	parse("1E") == parse("1000P")
}

test_equal_ei if {
	parse("1Ei") == parse("1024Pi")
}

test_equal_plus_sign if {
	parse("+2") == parse("2")
}

test_equal_number_and_string if {
	parse("3") == parse(3)
}

test_different_values if {
	not parse("1") == parse("2")
}

test_not_a_quantity_word if {
	not parse("abc")
}

test_not_a_quantity_bare_exponent if {
	not parse("1e")
}

test_not_a_quantity_lower_gi if {
	not parse("1gi")
}

test_not_a_quantity_unit_only if {
	not parse("Mi")
}

test_not_a_quantity_empty if {
	not parse("")
}

test_not_a_quantity_huge_exponent if {
	not parse("1e99999")
}

test_not_a_quantity_spaces if {
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
