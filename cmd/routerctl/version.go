package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcpsag/router/internal/buildinfo"
)

// versionOutput is version's JSON output.
type versionOutput struct {
	// Version is the one-line form: the version, the short revision and
	// "-dirty" for a modified tree.
	Version   string `json:"version"`
	Module    string `json:"module_version"`
	Revision  string `json:"revision"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"go_version"`
}

func newVersionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print routerctl's version",
		Long: `Prints the version of this routerctl build: the stamped or module version,
the VCS revision and whether the tree was modified, and the Go version.
routerctl status shows the router's own version.`,
		Example: `  routerctl version
  routerctl --version
  routerctl version --json`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			bi := buildinfo.Read()
			if e.json {
				return e.printJSON(versionOutput{Version: bi.String(), Module: bi.Version, Revision: bi.Revision, Modified: bi.Modified, GoVersion: bi.GoVersion})
			}
			_, err := fmt.Fprintf(e.stdout, "routerctl %s (%s)\n", bi.String(), bi.GoVersion)
			return err
		},
	}
}
