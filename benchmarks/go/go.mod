module trainerpolicy/benchmarks

go 1.24
