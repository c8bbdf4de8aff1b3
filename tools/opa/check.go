package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
)

type checkParams struct {
	format       string
	errLimit     int
	ignore       []string
	bundleMode   bool
	capabilities capabilitiesFlag
	schema       string
	strict       bool
}

func checkCommand() *cobra.Command {
	var p checkParams
	cmd := &cobra.Command{
		Use:   "check <path> [path [...]]",
		Short: "Check Rego source files",
		Long: `Check Rego source files for parse and compilation errors, as 'opa check' does: modules parse with
annotations processed (METADATA must be valid), compile (with --strict in strict mode) and type-check.
No output on success; otherwise the errors and exit 1.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("specify at least one file")
			}
			if p.format != "pretty" && p.format != "json" {
				return fmt.Errorf("invalid argument %q for \"-f, --format\" flag: must be one of pretty, json", p.format)
			}
			return nil
		},
		Run: func(_ *cobra.Command, args []string) {
			if err := checkModules(&p, args); err != nil {
				outputErrors(p.format, err)
				os.Exit(1)
			}
		},
	}
	addMaxErrorsFlag(cmd.Flags(), &p.errLimit)
	addIgnoreFlag(cmd.Flags(), &p.ignore)
	cmd.Flags().StringVarP(&p.format, "format", "f", "pretty", "set output format (pretty, json)")
	addBundleModeFlag(cmd.Flags(), &p.bundleMode)
	addCapabilitiesFlag(cmd.Flags(), &p.capabilities)
	cmd.Flags().StringVarP(&p.schema, "schema", "s", "", "set schema file path or directory path")
	cmd.Flags().BoolVarP(&p.strict, "strict", "S", false, "enable compiler strict mode")
	return cmd
}

func checkModules(p *checkParams, args []string) error {
	modules := map[string]*ast.Module{}
	capabilities := p.capabilities.C
	if capabilities == nil {
		capabilities = ast.CapabilitiesForThisVersion()
	}
	schemas, err := loader.Schemas(p.schema)
	if err != nil {
		return err
	}
	if p.bundleMode {
		for _, path := range args {
			b, err := loader.NewFileLoader().
				WithSkipBundleVerification(true).
				WithProcessAnnotation(true).
				WithCapabilities(capabilities).
				WithFilter(func(abspath string, info os.FileInfo, depth int) bool {
					return loaderFilter{Ignore: p.ignore}.Apply(abspath, info, depth)
				}).
				AsBundle(path)
			if err != nil {
				return err
			}
			for name, mod := range b.ParsedModules(path) {
				modules[name] = mod
			}
		}
	} else {
		result, err := loader.NewFileLoader().
			WithProcessAnnotation(true).
			WithCapabilities(capabilities).
			Filtered(args, loaderFilter{Ignore: p.ignore, OnlyRego: true}.Apply)
		if err != nil {
			return err
		}
		for _, m := range result.Modules {
			modules[m.Name] = m.Parsed
		}
	}
	compiler := ast.NewCompiler().
		SetErrorLimit(p.errLimit).
		WithCapabilities(capabilities).
		WithSchemas(schemas).
		WithEnablePrintStatements(true).
		WithStrict(p.strict).
		WithUseTypeCheckAnnotations(true)
	compiler.Compile(modules)
	if compiler.Failed() {
		return compiler.Errors
	}
	return nil
}

// outputErrors prints as `opa check` does: the errors' text, or {"errors": [...]} with --format json.
func outputErrors(format string, err error) {
	var out io.Writer = os.Stderr
	if format == "json" {
		var list []*ast.Error
		var astErrs ast.Errors
		if errors.As(err, &astErrs) {
			list = astErrs
		} else {
			list = []*ast.Error{{Code: "error", Message: err.Error()}}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if e := enc.Encode(map[string]interface{}{"errors": list}); e != nil {
			fmt.Fprintln(os.Stderr, e.Error())
		}
		return
	}
	fmt.Fprintln(out, err)
}
