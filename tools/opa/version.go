package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/version"
)

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of OPA's packages this command is built from",
		Run: func(*cobra.Command, []string) {
			fmt.Println("Version: " + version.Version)
			fmt.Println("Go Version: " + runtime.Version())
			fmt.Println("Platform: " + runtime.GOOS + "/" + runtime.GOARCH)
			fmt.Println("Rego Version: " + ast.DefaultRegoVersion.String())
			fmt.Println("Build: OPA's Go packages from Debian (kubeflow-trainer-policy tools/opa)")
		},
	}
}

func capabilitiesCommand() *cobra.Command {
	var current bool
	var file string
	cmd := &cobra.Command{
		Use:   "capabilities",
		Short: "Print the capabilities of this OPA (--current) or of a capabilities file (--file)",
		RunE: func(*cobra.Command, []string) error {
			var c *ast.Capabilities
			var err error
			switch {
			case current:
				c = ast.CapabilitiesForThisVersion()
			case file != "":
				c, err = ast.LoadCapabilitiesFile(file)
			default:
				return errors.New("specify --current or --file")
			}
			if err != nil {
				return err
			}
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(c)
		},
	}
	cmd.Flags().BoolVar(&current, "current", false, "print current capabilities")
	cmd.Flags().StringVar(&file, "file", "", "print current capabilities from a file")
	return cmd
}
