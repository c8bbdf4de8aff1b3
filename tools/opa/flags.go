package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/spf13/pflag"
)

// capabilitiesFlag is OPA's --capabilities: a capabilities.json file or an OPA version.
type capabilitiesFlag struct {
	C             *ast.Capabilities
	pathOrVersion string
}

func (*capabilitiesFlag) Type() string { return "string" }

func (f *capabilitiesFlag) String() string { return f.pathOrVersion }

func (f *capabilitiesFlag) Set(s string) error {
	f.pathOrVersion = s
	var errPath, errVersion error
	f.C, errPath = ast.LoadCapabilitiesFile(s)
	if errPath != nil {
		f.C, errVersion = ast.LoadCapabilitiesVersion(s)
	}
	if errVersion != nil && errPath != nil {
		return fmt.Errorf("no such file or capabilities version found: %v", s)
	}
	return nil
}

func addCapabilitiesFlag(fs *pflag.FlagSet, f *capabilitiesFlag) {
	fs.VarP(f, "capabilities", "", "set capabilities version or capabilities.json file path")
}

func addIgnoreFlag(fs *pflag.FlagSet, ignore *[]string) {
	fs.StringSliceVarP(ignore, "ignore", "", []string{}, "set file and directory names to ignore during loading (e.g., '.*' excludes hidden files)")
}

func addMaxErrorsFlag(fs *pflag.FlagSet, errLimit *int) {
	fs.IntVarP(errLimit, "max-errors", "m", ast.CompileErrorLimitDefault, "set the number of errors to allow before compilation fails early")
}

func addBundleModeFlag(fs *pflag.FlagSet, b *bool) {
	fs.BoolVarP(b, "bundle", "b", false, "load paths as bundle files or root directories")
}

// loaderFilter is OPA's: ignore names matching --ignore, and (for check) anything but .rego files.
type loaderFilter struct {
	Ignore   []string
	OnlyRego bool
}

func (f loaderFilter) Apply(abspath string, info os.FileInfo, depth int) bool {
	if f.OnlyRego && !info.IsDir() && filepath.Ext(info.Name()) != bundle.RegoExt {
		return true
	}
	for _, s := range f.Ignore {
		if loader.GlobExcludeName(s, 1)(abspath, info, depth) {
			return true
		}
	}
	return false
}
