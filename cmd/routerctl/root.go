package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/buildinfo"
	"github.com/mcpsag/router/internal/remote"
)

const defaultAddr = "127.0.0.1:7443"

const rootLong = `routerctl talks to a running router over gRPC (match, list, show, load,
reindex, status, servers, health, authorize-exec, model info) and works offline
on skill folders and labelled queries (validate, eval, calibrate, model verify,
token).

Global flags work anywhere on the line, before or after the command.
Calls that the router answers Unavailable (it is still building its first
index) are retried with backoff until --timeout. A router that does not
listen is reported at once, unless --timeout is given: then it is waited for
too (a router that is starting).

Environment:
  MCPSAG_ADDR    router address (--addr wins)
  MCPSAG_TOKEN   bearer token (--token wins); prefer it to --token, which
                 shows up in ps

Exit codes: 0 ok, 1 error (or a negative answer: see validate, health,
authorize-exec, model verify), 2 usage.`

// newRoot builds the command tree.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:               "routerctl",
		Short:             "operate a skill router and check skill folders",
		Long:              rootLong,
		Version:           buildinfo.Read().String(),
		SilenceErrors:     true,
		SilenceUsage:      true,
		PersistentPreRunE: e.setup,
		// A bare "routerctl" prints the help on stderr and exits 2;
		// anything else that is not a command is a usage error.
		Args: unknownCommand,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(e.stderr)
			_ = cmd.Help()
			return exitStatus(exitUsage)
		},
	}
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetVersionTemplate("routerctl {{.Version}}\n")
	root.Flags().BoolP("version", "v", false, "print routerctl's version")
	// Commands that hold others run only to report a usage error: show
	// them as "routerctl model [command]", not also "routerctl model [flags]".
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(),
		"{{if .Runnable}}", "{{if and .Runnable (not .HasAvailableSubCommands)}}", 1))
	root.SetFlagErrorFunc(flagError)

	e.addGlobalFlags(root.PersistentFlags())

	root.AddGroup(&cobra.Group{ID: "router", Title: "Commands that ask a running router:"},
		&cobra.Group{ID: "offline", Title: "Offline commands (no router needed):"})
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add("router", newMatchCmd(e), newListCmd(e), newShowCmd(e), newLoadCmd(e), newStatusCmd(e), newServersCmd(e),
		newHealthCmd(e), newReindexCmd(e), newAuthorizeExecCmd(e), newModelCmd(e))
	add("offline", newValidateCmd(e), newEvalCmd(e), newCalibrateCmd(e), newTokenCmd(e), newVersionCmd(e))
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	e.registerCompletions(root)
	describeBuiltins(root)
	return root
}

// addGlobalFlags defines the flags every command takes.
func (e *env) addGlobalFlags(pf *pflag.FlagSet) {
	pf.StringVar(&e.addr, "addr", defaultAddr, "router `address` (env MCPSAG_ADDR)")
	pf.BoolVar(&e.json, "json", false, "print one JSON document on stdout (stable keys; see docs/routerctl.md)")
	pf.DurationVar(&e.timeout, "timeout", 30*time.Second, "give up on the router after this `duration`, retrying while it is unavailable (given, also wait for a router that is not listening yet)")
	pf.StringVar(&e.token, "token", "", "bearer `token` when the router requires one (env MCPSAG_TOKEN, preferred: flags show up in ps)")
	pf.StringVar(&e.tls.CA, "tls-ca", "", "connect with TLS, trusting the CA certificates in `file`")
	pf.StringVar(&e.tls.Cert, "tls-cert", "", "client certificate `file` for mutual TLS (with --tls-key)")
	pf.StringVar(&e.tls.Key, "tls-key", "", "client key `file` for mutual TLS (with --tls-cert)")
	pf.StringVar(&e.tls.ServerName, "tls-server-name", "", "expected server `name` (default: the host of --addr)")
}

// describeBuiltins words cobra's help and completion commands as ours are.
func describeBuiltins(root *cobra.Command) {
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Short = "show the help of a command"
			strictHelp(root, c)
		case "completion":
			c.Short = "print a shell completion script (bash, zsh, fish, powershell)"
			c.Example = "  source <(routerctl completion bash)\n  routerctl completion zsh > \"${fpath[1]}/_routerctl\""
			requireSubcommand(c)
		}
	}
}

// setup resolves the global options from the environment and checks them.
func (e *env) setup(cmd *cobra.Command, _ []string) error {
	flags := cmd.Flags()
	if v := e.getenv("MCPSAG_ADDR"); v != "" && !flags.Changed("addr") {
		e.addr = v
	}
	e.tokenFrom = "--token"
	if v := e.getenv("MCPSAG_TOKEN"); v != "" && !flags.Changed("token") {
		e.token, e.tokenFrom = v, "MCPSAG_TOKEN"
	}
	if err := remote.CheckAddr(e.addr); err != nil {
		from := "--addr"
		if !flags.Changed("addr") && e.getenv("MCPSAG_ADDR") != "" {
			from = "MCPSAG_ADDR"
		}
		return usageErrorf("%s %s", from, err)
	}
	e.timeoutSet = flags.Changed("timeout")
	if e.timeout <= 0 {
		return usageErrorf("--timeout %s: want a positive duration such as 30s", e.timeout)
	}
	if (e.tls.Cert == "") != (e.tls.Key == "") {
		return usageError{"--tls-cert and --tls-key go together"}
	}
	return nil
}

// flagError makes a flag parsing error a usage error, and points a user of
// the single-dash style (-json) to the flag meant.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	if _, arg, ok := strings.Cut(msg, "unknown shorthand flag: "); ok {
		if _, word, ok := strings.Cut(arg, " in -"); ok {
			name, _, _ := strings.Cut(word, "=")
			if cmd.Flags().Lookup(name) != nil {
				msg += "; did you mean --" + word + "?"
			}
		}
	}
	return usageError{msg}
}

// unknownCommand rejects arguments to a command that only holds others.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usageError{msg}
}

// requireSubcommand makes a command that groups others fail with a usage
// error when it is called bare or with an unknown subcommand.
func requireSubcommand(c *cobra.Command) {
	c.Args = unknownCommand
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		var names []string
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		return usageErrorf("%s needs a subcommand: %s", strings.TrimPrefix(cmd.CommandPath(), "routerctl "), orList(names))
	}
}

// strictHelp makes "routerctl help TOPIC" a usage error when TOPIC is not a
// command.
func strictHelp(root, help *cobra.Command) {
	show := help.Run
	help.Run = nil
	help.RunE = func(cmd *cobra.Command, args []string) error {
		if found, rest, err := root.Find(args); err != nil || found == nil || len(rest) > 0 {
			return usageErrorf("no help for %q: not a command", strings.Join(args, " "))
		}
		show(cmd, args)
		return nil
	}
}

// exactArgs accepts exactly n positional arguments, named by what in the
// message (for example "one skill NAME").
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s takes %s, got %d argument%s", cmd.Name(), what, len(args), plural(len(args)))
		}
		return nil
	}
}

// noArgs accepts no positional argument.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s takes no arguments, got %q", cmd.Name(), strings.Join(args, " "))
	}
	return nil
}

// minArgs accepts at least n positional arguments.
func minArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usageErrorf("%s needs %s", cmd.Name(), what)
		}
		return nil
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// oneOf checks that a string flag's value is one of want; an empty value
// passes when want lists "".
func oneOf(flags *pflag.FlagSet, name string, want ...string) error {
	v, err := flags.GetString(name)
	if err != nil {
		return err
	}
	for _, w := range want {
		if v == w {
			return nil
		}
	}
	return usageErrorf("--%s %q: want %s", name, v, orList(want))
}

// kindsFilter parses --kinds.
func kindsFilter(v string) (routerv1.KindFilter, error) {
	switch v {
	case "", "both":
		return routerv1.KindFilter_KIND_FILTER_UNSPECIFIED, nil
	case "skills":
		return routerv1.KindFilter_KIND_FILTER_SKILLS, nil
	case "tools":
		return routerv1.KindFilter_KIND_FILTER_TOOLS, nil
	}
	return 0, usageErrorf("--kinds %q: want skills, tools or both", v)
}

func orList(s []string) string {
	var vs []string
	for _, v := range s {
		if v != "" {
			vs = append(vs, v)
		}
	}
	if len(vs) < 2 {
		return strings.Join(vs, "")
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}
