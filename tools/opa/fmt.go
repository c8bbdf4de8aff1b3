package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sergi/go-diff/diffmatchpatch"
	"github.com/spf13/cobra"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"
)

// fmtParams are `opa fmt`'s flags that apply to Rego v1 (the only Rego this project writes).
type fmtParams struct {
	overwrite bool
	list      bool
	diff      bool
	fail      bool
}

type fmtError struct {
	msg  string
	code int
}

func (e fmtError) Error() string { return fmt.Sprintf("%s (%d)", e.msg, e.code) }

func newFmtError(msg string, a ...interface{}) fmtError {
	return fmtError{msg: fmt.Sprintf(msg, a...), code: 2}
}

func fmtCommand() *cobra.Command {
	var p fmtParams
	cmd := &cobra.Command{
		Use:   "fmt [path [...]]",
		Short: "Format Rego source files",
		Long: `Format Rego source files, as 'opa fmt' does (OPA's format package): with no path, stdin to stdout;
-w overwrites, -d prints a diff, -l lists the files that would change, --fail exits 2 when one would.`,
		Run: func(_ *cobra.Command, args []string) { os.Exit(opaFmt(&p, args)) },
	}
	cmd.Flags().BoolVarP(&p.overwrite, "write", "w", false, "overwrite the original source file")
	cmd.Flags().BoolVarP(&p.list, "list", "l", false, "list all files who would change when formatted")
	cmd.Flags().BoolVarP(&p.diff, "diff", "d", false, "only display a diff of the changes")
	cmd.Flags().BoolVar(&p.fail, "fail", false, "non zero exit code on reformat")
	return cmd
}

func opaFmt(p *fmtParams, args []string) int {
	if len(args) == 0 {
		contents, err := io.ReadAll(os.Stdin)
		if err == nil {
			var formatted []byte
			formatted, err = format.SourceWithOpts("stdin", contents, format.Opts{RegoVersion: ast.RegoV1})
			if err == nil {
				_, err = os.Stdout.Write(formatted)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	for _, name := range args {
		err := filepath.Walk(name, func(path string, info os.FileInfo, err error) error {
			return formatFile(p, os.Stdout, path, info, err)
		})
		if err != nil {
			if e, ok := err.(fmtError); ok {
				fmt.Fprintln(os.Stderr, e.msg)
				return e.code
			}
			fmt.Fprintln(os.Stderr, err.Error())
			return 1
		}
	}
	return 0
}

func formatFile(p *fmtParams, out io.Writer, filename string, info os.FileInfo, err error) error {
	if err != nil {
		return err
	}
	if info.IsDir() || filepath.Ext(filename) != ".rego" {
		return nil
	}
	contents, err := os.ReadFile(filename)
	if err != nil {
		return newFmtError("failed to open file: %v", err)
	}
	formatted, err := format.SourceWithOpts(filename, contents, format.Opts{RegoVersion: ast.RegoV1})
	if err != nil {
		return newFmtError("failed to format Rego source file: %v", err)
	}
	if _, err := ast.ParseModuleWithOpts("formatted", string(formatted), ast.ParserOptions{RegoVersion: ast.RegoV1}); err != nil {
		return newFmtError("%s was successfully formatted, but the result is invalid: %v", filename, err)
	}
	changed := !bytes.Equal(contents, formatted)
	if p.fail && !p.list && !p.diff && changed {
		return newFmtError("unexpected diff")
	}
	if p.list {
		if changed {
			fmt.Fprintln(out, filename)
			if p.fail {
				return newFmtError("unexpected diff")
			}
		}
		return nil
	}
	if p.diff {
		if changed {
			dmp := diffmatchpatch.New()
			if _, err := fmt.Fprintln(out, dmp.DiffPrettyText(dmp.DiffMain(string(contents), string(formatted), false))); err != nil {
				return newFmtError("failed to print contents: %v", err)
			}
			if p.fail {
				return newFmtError("unexpected diff")
			}
		}
		return nil
	}
	if p.overwrite {
		outfile, err := os.OpenFile(filename, os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
		if err != nil {
			return newFmtError("failed to open file for writing: %v", err)
		}
		defer outfile.Close()
		out = outfile
	}
	if _, err := out.Write(formatted); err != nil {
		return newFmtError("failed writing formatted contents: %v", err)
	}
	return nil
}
