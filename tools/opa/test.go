package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/topdown/lineage"
)

// testParams are `opa test`'s flags, less benchmarking, watching and the wasm target.
type testParams struct {
	verbose      bool
	errLimit     int
	format       string
	coverage     bool
	threshold    float64
	timeout      time.Duration
	ignore       []string
	bundleMode   bool
	runRegex     string
	skipExitZero bool
	capabilities capabilitiesFlag
	schema       string
	varValues    bool
}

func testCommand() *cobra.Command {
	var p testParams
	cmd := &cobra.Command{
		Use:   "test <path> [path [...]]",
		Short: "Execute Rego test cases",
		Long: `Execute Rego test cases, as 'opa test' does (OPA's tester package): every rule named test_* of every
module under the paths (*.rego, with *.json and *.yaml data files), with OPA's pretty or JSON report, or the JSON
coverage report with --coverage. Exit 2 when a test fails or coverage is below --threshold.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("specify at least one file")
			}
			if p.format != "pretty" && p.format != "json" {
				return fmt.Errorf("invalid argument %q for \"-f, --format\" flag: must be one of pretty, json", p.format)
			}
			return nil
		},
		Run: func(_ *cobra.Command, args []string) { os.Exit(opaTest(&p, args)) },
	}
	cmd.Flags().BoolVarP(&p.skipExitZero, "exit-zero-on-skipped", "z", false, "skipped tests return status 0")
	cmd.Flags().BoolVarP(&p.verbose, "verbose", "v", false, "set verbose reporting mode")
	cmd.Flags().DurationVar(&p.timeout, "timeout", 0, "set test timeout (default 5s)")
	cmd.Flags().StringVarP(&p.format, "format", "f", "pretty", "set output format (pretty, json)")
	cmd.Flags().BoolVarP(&p.coverage, "coverage", "c", false, "report coverage (overrides debug tracing)")
	cmd.Flags().Float64VarP(&p.threshold, "threshold", "", 0, "set coverage threshold and exit with non-zero status if coverage is less than threshold %")
	cmd.Flags().StringVarP(&p.runRegex, "run", "r", "", "run only test cases matching the regular expression.")
	cmd.Flags().BoolVar(&p.varValues, "var-values", false, "show local variable values in test output")
	addBundleModeFlag(cmd.Flags(), &p.bundleMode)
	addMaxErrorsFlag(cmd.Flags(), &p.errLimit)
	addIgnoreFlag(cmd.Flags(), &p.ignore)
	addCapabilitiesFlag(cmd.Flags(), &p.capabilities)
	cmd.Flags().StringVarP(&p.schema, "schema", "s", "", "set schema file path or directory path")
	return cmd
}

func opaTest(p *testParams, args []string) int {
	ctx := context.Background()
	if p.threshold < 0 || p.threshold > 100 {
		fmt.Fprintln(os.Stderr, "Code coverage threshold must be between 0 and 100")
		return 1
	}
	filter := loaderFilter{Ignore: p.ignore}
	popts := ast.ParserOptions{Capabilities: p.capabilities.C, ProcessAnnotation: true}
	var modules map[string]*ast.Module
	var bundles map[string]*bundle.Bundle
	var store storage.Store
	var err error
	if p.bundleMode {
		bundles, err = tester.LoadBundlesWithParserOptions(args, filter.Apply, popts)
		store = inmem.NewWithOpts(inmem.OptRoundTripOnWrite(false))
	} else {
		modules, store, err = tester.LoadWithParserOptions(args, filter.Apply, popts)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	txn, err := store.NewTransaction(ctx, storage.WriteParams)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer store.Abort(ctx, txn)

	capabilities := p.capabilities.C
	if capabilities == nil {
		capabilities = ast.CapabilitiesForThisVersion()
	}
	schemas, err := loader.Schemas(p.schema)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	compiler := ast.NewCompiler().
		SetErrorLimit(p.errLimit).
		WithPathConflictsCheck(storage.NonEmpty(ctx, store, txn)).
		WithEnablePrintStatements(true).
		WithCapabilities(capabilities).
		WithSchemas(schemas).
		WithUseTypeCheckAnnotations(true).
		WithRewriteTestRules(p.varValues)
	if p.threshold > 0 {
		p.coverage = true
	}
	var cov *cover.Cover
	var coverTracer topdown.QueryTracer
	if p.coverage {
		cov = cover.New()
		coverTracer = cov
	}
	timeout := p.timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	runner := tester.NewRunner().
		SetCompiler(compiler).
		SetStore(store).
		CapturePrintOutput(true).
		EnableTracing(p.verbose || p.varValues).
		SetCoverageQueryTracer(coverTracer).
		SetModules(modules).
		SetBundles(bundles).
		SetTimeout(timeout).
		Filter(p.runRegex)

	var reporter tester.Reporter
	switch {
	case p.coverage:
		reporter = tester.JSONCoverageReporter{Cover: cov, Modules: modules, Output: os.Stdout, Threshold: p.threshold, Verbose: p.verbose}
	case p.format == "json":
		reporter = tester.JSONReporter{Output: os.Stdout}
	default:
		reporter = tester.PrettyReporter{Verbose: p.verbose, Output: os.Stdout, FailureLine: p.varValues, LocalVars: p.varValues}
	}

	ch, err := runner.RunTests(ctx, txn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	exitCode := 0
	dup := make(chan *tester.Result)
	go func() {
		defer close(dup)
		for tr := range ch {
			if !tr.Pass() && !(tr.Skip && p.skipExitZero) {
				exitCode = 2
			}
			if p.verbose {
				tr.Trace = lineage.Filter(tr.Trace, func(event *topdown.Event) bool {
					return event.Op == topdown.NoteOp || event.Op == topdown.FailOp
				})
			} else {
				tr.Trace = nil
			}
			dup <- tr
		}
	}()
	if err := reporter.Report(dup); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if _, ok := err.(*cover.CoverageThresholdError); ok {
			return 2
		}
		return 1
	}
	return exitCode
}
