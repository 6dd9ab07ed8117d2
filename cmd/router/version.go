package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcpsag/router/internal/buildinfo"
)

func version() string { return buildinfo.Read().String() }

func (c *cli) versionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the router's version, VCS revision and Go version",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			info := buildinfo.Read()
			if asJSON {
				enc := json.NewEncoder(c.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			}
			_, err := fmt.Fprintf(c.stdout, "router %s (%s)\n", info, info.GoVersion)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return cmd
}
