// Command opa is a small OPA command line built from OPA's own Go packages (github.com/open-policy-agent/opa/v1)
// as Debian ships them. OPA's `cmd` and `runtime` packages do not build against Debian's tablewriter (both reach
// internal/presentation), so this command puts the library packages behind the `opa` CLI's own flags and
// output: fmt, check, test, run (bundle activation and the REST server with the bundle plugin),
// capabilities and version. It reads only the paths it is given.
package main

import (
	"fmt"
	"os"
	"path"

	"github.com/spf13/cobra"
)

var root = &cobra.Command{
	Use:           path.Base(os.Args[0]),
	Short:         "Open Policy Agent (OPA), the subset of its command line built from OPA's Go packages",
	SilenceUsage:  true,
	SilenceErrors: true,
}

func main() {
	root.AddCommand(fmtCommand(), checkCommand(), testCommand(), runCommand(), capabilitiesCommand(), versionCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
